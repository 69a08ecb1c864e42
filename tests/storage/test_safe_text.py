"""Control characters escaped and secrets redacted (storage/safe_text.py)."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from storage.safe_text import escape_control, redact_secrets, redact_url


def test_escape_control_makes_escape_sequences_visible() -> None:
    hostile = "a\x1b[31mred\x1b]8;;http://x\x07link\x9b2J\u202eevil\nz"
    out = escape_control(hostile)
    assert out == "a\\x1b[31mred\\x1b]8;;http://x\\x07link\\x9b2J\\u202eevil\\nz"
    assert escape_control("two\nlines\ttab", keep_newlines=True) == "two\nlines\\ttab"
    assert escape_control("café — 日本 🙂") == "café — 日本 🙂"
    assert escape_control(None) == ""


@given(st.text())
def test_escaped_text_has_no_control_characters(text: str) -> None:
    out = escape_control(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in out)


def test_redact_url_hides_user_info_and_secret_parameters() -> None:
    url = "https://user:sk-live-1@api.example.com:8443/v1?api_key=sk-2&model=m&token=t"
    out = redact_url(url)
    assert "sk-live-1" not in out and "sk-2" not in out and "=t" not in out
    assert out.startswith("https://***@api.example.com:8443/v1?")
    assert "model=m" in out
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert redact_url("not a url") == "not a url"


def test_redact_secrets_in_free_text_including_base64_basic_auth() -> None:
    basic = base64.b64encode(b"user:sk-secret").decode()
    text = (
        "Connection error to http://u:sk-secret@h/v1?key=abc (headers: "
        f"Authorization: Basic {basic}; Bearer sk-bearer) api_key=sk-x"
    )
    out = redact_secrets(text)
    for secret in ("sk-secret", basic, "sk-bearer", "sk-x", "abc"):
        assert secret not in out, out
    assert "http://***@h/v1?key=***" in out
