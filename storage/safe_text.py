"""Text that is safe to show: control characters escaped, secrets in URLs redacted.

Two pure functions every room uses before untrusted or secret-bearing text reaches a
terminal, a Markdown file, a log line, a page or a stored error message:

* :func:`escape_control` turns control characters (C0, DEL, C1 and the Unicode
  bidirectional overrides) into visible ``\\xNN`` / ``\\uNNNN`` escapes, so stored model
  output or an imported question cannot move the cursor, clear the screen, set a
  terminal hyperlink (OSC 8) or reorder what the reader sees.
* :func:`redact_url` / :func:`redact_secrets` hide credentials in URLs (user-info,
  ``api_key``/``key``/``token``-like query parameters) and in ``Basic``/``Bearer``
  authorisation values, including the base64 form a client library puts in an error.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

#: What replaces a secret.
REDACTED = "***"

# C0 controls, DEL, C1 controls, and the bidi embedding/override/isolate characters
# ("Trojan Source"): all of them change what a reader sees without being visible.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

#: Query parameters whose value is a secret (compared case-insensitively).
SECRET_PARAMS: frozenset[str] = frozenset(
    {
        "api_key",
        "apikey",
        "api-key",
        "key",
        "token",
        "access_token",
        "auth",
        "password",
        "secret",
        "sig",
        "signature",
    }
)

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
_AUTH_VALUE = re.compile(r"\b(Basic|Bearer)(\s+|%20)[A-Za-z0-9+/=._~\-]+", re.IGNORECASE)
_KEY_ASSIGN = re.compile(
    r"(?i)\b(api[_-]?key|access[_-]?token|token|password|secret)(\s*[=:]\s*)(['\"]?)[^\s'\",&}]+"
)


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_control(text: object, *, keep_newlines: bool = False) -> str:
    """Escape control characters so the text shows literally on one line.

    Args:
        text: any value (``None`` is the empty string).
        keep_newlines: keep ``\\n`` as a line break (multi-line output such as tables).

    Returns:
        The text with every control character written as ``\\xNN`` or ``\\uNNNN``;
        printable text (any script, emoji) is unchanged.
    """
    value = "" if text is None else str(text)
    pattern = _CONTROL_KEEP_NEWLINE if keep_newlines else _CONTROL
    return pattern.sub(_escape_char, value)


def redact_url(url: str) -> str:
    """The URL with its user-info and secret query parameters replaced by ``***``.

    ``https://user:sk-1@host/v1?api_key=x&model=m`` becomes
    ``https://***@host/v1?api_key=***&model=m``. Text that is not a URL is returned as is.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(k.lower() in SECRET_PARAMS for k, _ in pairs):
            query = urlencode(
                [(k, REDACTED if k.lower() in SECRET_PARAMS else v) for k, v in pairs], safe="*"
            )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_secrets(text: object) -> str:
    """Redact every URL, authorisation value and ``key=…`` assignment in free text.

    Used on error messages before they are shown or stored: a client library may echo
    the endpoint URL (with a key in its user-info or query) or the ``Authorization``
    header, whose ``Basic`` value is the base64 of ``user:key``.
    """
    value = "" if text is None else str(text)
    value = _URL.sub(lambda m: redact_url(m.group(0)), value)
    value = _AUTH_VALUE.sub(lambda m: f"{m.group(1)} {REDACTED}", value)
    return _KEY_ASSIGN.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{REDACTED}", value)


def holds_nul(value: object) -> bool:
    """Whether a parsed JSON value holds a NUL character anywhere (keys included).

    PostgreSQL's text columns refuse NUL (``\\u0000`` in a JSON line decodes to one), so an
    imported file holding one is refused in one sentence naming its line instead of an
    87-line ``psycopg.DataError`` at the first insert.
    """
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(holds_nul(k) or holds_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(holds_nul(v) for v in value)
    return False
