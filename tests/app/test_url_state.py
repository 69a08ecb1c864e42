"""``app.ui.url_state``: the URL opens a view, a pick rewrites the URL, unknown ids say so.

Each test runs a small script through Streamlit's ``AppTest`` (no server, no browser): the
script draws one bound widget, the test sets ``?param=`` and reads the widget, the captions
and the query parameters back.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.apptest_support import unescape


def _runs_script() -> None:
    import streamlit as st

    from app.ui.url_state import url_select

    picked = url_select("Run", ["demo", "other", "a<b>"], param="run", default="other")
    st.text(f"shown: {picked}")


def _ids_script() -> None:
    import streamlit as st

    from app.ui.url_state import url_open, url_select

    picked = url_select(
        "Analysis", [3, 2, 1], param="analysis", format_func=lambda i: f"#{i}", what="analysis"
    )
    st.text(f"shown: {picked}")
    if st.button("store"):
        url_open("analysis", 1)
        st.rerun()


def _multi_script() -> None:
    import streamlit as st

    from app.ui.url_state import url_multiselect

    picked = url_multiselect("Runs", ["a", "b", "c"], param="runs", default=["a"])
    st.text(f"shown: {picked}")


def _app(script: object, **params: str | list[str]) -> AppTest:
    at = AppTest.from_function(script, default_timeout=30)  # type: ignore[arg-type]
    for name, value in params.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _url(at: AppTest, name: str) -> list[str]:
    value = at.query_params[name]
    return [value] if isinstance(value, str) else list(value)


def _captions(at: AppTest) -> list[str]:
    return [unescape(c.value) for c in at.caption]


def test_the_link_opens_its_value_and_a_pick_rewrites_the_url() -> None:
    at = _app(_runs_script, run="demo")
    assert at.selectbox[0].value == "demo"
    assert at.text[0].value == "shown: demo"
    at.selectbox[0].select("a<b>").run()
    assert at.text[0].value == "shown: a<b>"
    assert _url(at, "run") == ["a<b>"]  # the address bar follows the pick (defect K)
    assert not at.caption


def test_no_link_shows_the_default_and_writes_it_into_the_url() -> None:
    at = _app(_runs_script)
    assert at.selectbox[0].value == "other"
    assert _url(at, "run") == ["other"]


def test_an_unknown_id_says_so_in_one_escaped_line_until_another_is_picked() -> None:
    at = _app(_ids_script, analysis="999")
    assert at.text[0].value == "shown: 3"  # the newest, and said so
    assert _captions(at) == ["unknown analysis '999'"]
    assert _url(at, "analysis") == ["3"]
    at.run()  # an unrelated rerun keeps the line: the link named a missing id
    assert _captions(at) == ["unknown analysis '999'"]
    at.selectbox[0].select(2).run()
    assert not at.caption
    assert _url(at, "analysis") == ["2"]


def test_hostile_unknown_value_is_inert_text() -> None:
    at = _app(_runs_script, run="**x**<img src=1>")
    (line,) = [c.value for c in at.caption]
    assert "\\*\\*x\\*\\*" in line and "\\<img" in line  # Markdown-escaped
    assert at.text[0].value == "shown: other"


def test_url_open_shows_the_stored_value_on_the_rerun() -> None:
    at = _app(_ids_script, analysis="2")
    assert at.text[0].value == "shown: 2"
    at.button[0].click().run()
    assert at.text[0].value == "shown: 1"
    assert _url(at, "analysis") == ["1"]


def test_multiselect_link_keeps_known_names_and_names_the_missing_ones() -> None:
    at = _app(_multi_script, runs=["b", "zz", "c"])
    assert at.multiselect[0].value == ["b", "c"]
    assert _captions(at) == ["unknown runs 'zz'"]
    at.multiselect[0].unselect("c").run()
    assert _url(at, "runs") == ["b"]
    assert not at.caption
