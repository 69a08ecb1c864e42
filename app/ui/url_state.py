"""Widgets whose choice lives in the address bar, so every view of a page can be linked.

A page's state (the run, analysis, round, version, study, arm, item shown) is a widget bound
to one query parameter: ``?run=demo`` opens the page on run ``demo`` and picking another run
rewrites the address bar to ``?run=<that run>``, so the address is always a link to what is
on the screen.

Precedence, per widget and browser session:

1. a value handed over with :func:`url_open` (a page that just stored something opens it);
2. the value the user picked on this page (the widget's state);
3. the URL, when the widget is first drawn on this visit of the page and the page did not
   write that value itself (a pasted link, a reload, a link from another page): a value that
   names no option shows one line ``unknown <what> '<value>'`` and the default is shown
   instead (the line stays until another value is picked);
4. the value last picked in this session (on the way back from another page);
5. ``default`` (else the first option).

Streamlit 1.67's own ``bind="query-params"`` is not used: it writes the formatted label into
the URL (``?analysis=%233%20·%20demo…`` instead of ``?analysis=3``), drops a parameter that
equals the default (a link to "the newest" changes meaning later) and ignores an unknown
value silently, which is the defect these widgets fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import streamlit as st

from app.ui.safe import plain_message

T = TypeVar("T")

_PREFIX = "url::"


def _page_hash() -> str:
    """The running page's id, so one parameter name on two pages keeps two choices."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.page_script_hash if ctx is not None else ""


def _keys(param: str, key: str | None) -> tuple[str, str, str, str]:
    """(widget, remembered choice, unknown notice, URL text last written) keys of a widget."""
    widget = key or f"{_PREFIX}{_page_hash()}::{param}"
    return widget, f"{widget}::last", f"{widget}::unknown", f"{widget}::written"


def _linked(param: str, key: str, written: str) -> list[str] | None:
    """The URL's values of ``param`` when they are a link to follow, else ``None``.

    They are when the widget is drawn for the first time on this visit of the page (a page
    load, a reload, arriving from another page) and the page did not write them itself.
    """
    if key in st.session_state:
        return None
    values = st.query_params.get_all(param)
    if not values or values == st.session_state.get(written):
        return None
    return values


def _pending_key(param: str) -> str:
    return f"{_PREFIX}{_page_hash()}::{param}::open"


def url_open(param: str, value: object) -> None:
    """Open ``value`` in the widget bound to ``param`` on the next run (call ``st.rerun``).

    For a page that has just stored something (an analysis, a version) and shows it: the
    URL is set now, and the widget, already drawn in this run, takes the value on the rerun.
    A list opens several choices of a :func:`url_multiselect`.
    """
    texts = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
    st.query_params[param] = texts if len(texts) != 1 else texts[0]
    st.session_state[_pending_key(param)] = texts


def unknown_line(what: str, value: str) -> str:
    """The one line shown when a link names an id that does not exist (escaped)."""
    return plain_message(f"unknown {what} '{value}'")


def _choose(
    options: Sequence[T],
    *,
    param: str,
    keys: tuple[str, str, str, str],
    default: T | None,
    to_param: Callable[[T], str],
) -> T | None:
    """The value the bound widget shows in this run (set into its state before it is drawn)."""
    key, last, unknown, written = keys
    by_text = {to_param(o): o for o in options}
    pending = st.session_state.pop(_pending_key(param), None)
    if pending and pending[0] in by_text:
        st.session_state.pop(unknown, None)
        return by_text[pending[0]]
    linked = _linked(param, key, written)
    if key in st.session_state and st.session_state[key] in options:
        return st.session_state[key]
    fallback = default if default in options else (options[0] if options else None)
    if linked is not None:
        wanted = linked[-1]
        if wanted in by_text:
            return by_text[wanted]
        st.session_state[unknown] = (wanted, fallback)
        return fallback
    remembered = st.session_state.get(last)
    if remembered in options:
        return remembered
    return fallback


def _sync_url(param: str, texts: list[str], written: str) -> None:
    """Point the address bar at the shown value(s) (only when it differs: no useless rerun)."""
    st.session_state[written] = texts
    if st.query_params.get_all(param) == texts:
        return
    if not texts:
        del st.query_params[param]
    else:
        st.query_params[param] = texts if len(texts) != 1 else texts[0]


def url_select(
    label: str,
    options: Iterable[T],
    *,
    param: str,
    default: T | None = None,
    format_func: Callable[[T], Any] = str,
    key: str | None = None,
    what: str | None = None,
    to_param: Callable[[T], str] = str,
    widget: Callable[..., Any] | None = None,
    **kwargs: Any,
) -> T | None:
    """A select box (or ``widget=st.radio``) whose choice is ``?<param>=`` in the URL.

    Args:
        label: The widget's label.
        options: The choices (any hashable values; ``to_param`` names them in the URL).
        param: The query parameter, e.g. ``"run"``.
        default: What to show without a link or earlier choice (else the first option).
        format_func: How an option is shown in the list.
        key: The widget key (default: one per page and parameter).
        what: The noun of the unknown-id line (default: ``param``).
        to_param: An option's text in the URL (default ``str``; ids stay ``?analysis=3``).
        widget: ``st.selectbox`` (default) or another single-choice widget taking
            ``label, options, format_func=, key=`` (``st.radio``, a column's selectbox).
        **kwargs: Passed on to the widget (``help``, ``disabled``, ``accept_new_options``…).

    Returns:
        The chosen option, or ``None`` when there are no options.
    """
    values = list(options)
    keys = _keys(param, key)
    wkey, last, unknown, written = keys
    chosen = _choose(values, param=param, keys=keys, default=default, to_param=to_param)
    if values:
        st.session_state[wkey] = chosen
    else:
        st.session_state.pop(wkey, None)
    draw = widget or st.selectbox
    picked = draw(label, values, format_func=format_func, key=wkey, **kwargs)
    notice = st.session_state.get(unknown)
    if notice is not None:
        if picked == notice[1]:
            st.caption(unknown_line(what or param, str(notice[0])))
        else:
            st.session_state.pop(unknown, None)  # another value was picked: the link is gone
    if picked is not None:
        st.session_state[last] = picked
    _sync_url(param, [] if picked is None else [to_param(picked)], written)
    return picked


def url_multiselect(
    label: str,
    options: Iterable[T],
    *,
    param: str,
    default: Sequence[T] = (),
    format_func: Callable[[T], Any] = str,
    key: str | None = None,
    what: str | None = None,
    to_param: Callable[[T], str] = str,
    **kwargs: Any,
) -> list[T]:
    """A multi-select whose choices are ``?<param>=a&<param>=b`` in the URL.

    Names in the link that are no option are left out and named in one line
    (``unknown <what> 'x', 'y'``); the rest of the link still opens.

    Args:
        label: The widget's label.
        options: The choices.
        param: The query parameter (repeated once per choice).
        default: The choices without a link or earlier choice.
        format_func: How an option is shown.
        key: The widget key (default: one per page and parameter).
        what: The noun of the unknown-id line (default: ``param``).
        to_param: An option's text in the URL.
        **kwargs: Passed on to ``st.multiselect``.

    Returns:
        The chosen options, in the widget's order.
    """
    values = list(options)
    by_text = {to_param(o): o for o in values}
    wkey, last, unknown, written = _keys(param, key)
    pending = st.session_state.pop(_pending_key(param), None)
    linked = _linked(param, wkey, written)
    current = st.session_state.get(wkey)
    if pending is not None:
        chosen = [by_text[t] for t in pending if t in by_text]
    elif isinstance(current, list) and all(v in values for v in current):
        chosen = current
    elif linked is not None:
        chosen = [by_text[t] for t in linked if t in by_text]
        missing = [t for t in linked if t not in by_text]
        if missing:
            st.session_state[unknown] = (missing, chosen)
    else:
        remembered = st.session_state.get(last)
        if isinstance(remembered, list) and all(v in values for v in remembered):
            chosen = remembered
        else:
            chosen = [v for v in default if v in values]
    st.session_state[wkey] = list(chosen)
    picked = list(st.multiselect(label, values, format_func=format_func, key=wkey, **kwargs))
    notice = st.session_state.get(unknown)
    if notice is not None:
        if picked == notice[1]:
            names = ", ".join(f"'{m}'" for m in notice[0])
            st.caption(plain_message(f"unknown {what or param} {names}"))
        else:
            st.session_state.pop(unknown, None)
    st.session_state[last] = picked
    _sync_url(param, [to_param(p) for p in picked], written)
    return picked
