"""Edit boxes whose unsaved text survives navigation and reloads, and a leave guard.

A draft box keeps its text in the workspace database (``storage.repo.drafts``) every time
Streamlit commits it (on blur or Ctrl+Enter), keyed by page, object and field, and starts
from that draft when the page is opened again, in this browser session or a new one.
Drafts are per workspace (they survive a reload and a new browser session), so two tabs on
one object share a draft: a tab whose draft another tab changed says so before its own
commit replaces it. :func:`leave_guard` asks before the browser leaves the page (a link of
the navigation or a reload) while a guarded box holds typing that has not reached the
server yet.
"""

from __future__ import annotations

import json
import time
from typing import Any

import streamlit as st

from app.ui.db import page_session
from storage.repo.drafts import discard_draft, get_draft, save_draft_field

LEAVE_MESSAGE = "You have unsaved edits on this page. Leave anyway?"


def _state_key(page: str, obj: str, field: str) -> str:
    return f"draft::{page}::{obj}::{field}"


def _seen_key(key: str) -> str:
    """Where a session keeps the draft text it last read or wrote (to spot another tab's)."""
    return f"{key}::seen"


def _other_tab_notice(key: str, stored: str | None, current: str) -> None:
    """Say so when another tab or browser session changed this draft since this one saw it.

    Drafts are kept per workspace so that they survive a reload; two tabs editing the same
    object therefore share one draft, and the later commit replaces the earlier. The tab
    that would overwrite (or has been overwritten) is told, with the other text's length.
    """
    seen_key = _seen_key(key)
    if seen_key not in st.session_state:
        st.session_state[seen_key] = stored
        return
    seen = st.session_state[seen_key]
    if stored != seen and stored != current and stored is not None:
        st.warning(
            "Another tab or browser session changed this draft since this tab loaded it "
            f"({len(stored)} characters there). What you commit here replaces it; reload this "
            "page to continue from the other tab's text instead."
        )


def draft_text_area(
    label: str, original: str, *, page: str, obj: str, field: str, **kwargs: Any
) -> str:
    """A ``st.text_area`` starting from the stored draft (else ``original``).

    Every committed change is written to the draft; text equal to ``original`` drops the
    field from the draft.
    """
    key = _state_key(page, obj, field)
    with page_session() as session:
        stored = get_draft(page, obj, session=session).get(field)
    if key not in st.session_state:
        # Streamlit forgets a widget's value when its page is left: read the draft again.
        st.session_state[key] = stored if stored is not None else original
        st.session_state[_seen_key(key)] = stored

    def keep() -> None:
        value = st.session_state.get(key, original)
        kept = None if value == original else value
        with page_session() as session:
            save_draft_field(page, obj, field, kept, session=session)
        st.session_state[_seen_key(key)] = kept

    text = str(st.text_area(label, key=key, on_change=keep, **kwargs))
    _other_tab_notice(key, stored, text)
    return text


def draft_chips(
    label: str, original: list[str], *, page: str, obj: str, field: str, **kwargs: Any
) -> list[str]:
    """A ``st.multiselect`` of terms (chips; typing adds one) kept as a draft like a text box.

    The chosen terms are stored as a JSON list; a choice equal to ``original`` drops the
    field from the draft.
    """
    key = _state_key(page, obj, field)
    with page_session() as session:
        stored = get_draft(page, obj, session=session).get(field)
    if key not in st.session_state:
        st.session_state[key] = list(json.loads(stored)) if stored else list(original)
        st.session_state[_seen_key(key)] = stored

    def keep() -> None:
        value = list(st.session_state.get(key, original))
        kept = None if value == list(original) else json.dumps(value, ensure_ascii=False)
        with page_session() as session:
            save_draft_field(page, obj, field, kept, session=session)
        st.session_state[_seen_key(key)] = kept

    # Options: the original terms and any the draft added, so a stored chip is offered.
    options = list(dict.fromkeys([*original, *st.session_state[key]]))
    chosen = list(
        st.multiselect(label, options, key=key, on_change=keep, accept_new_options=True, **kwargs)
    )
    _other_tab_notice(key, stored, json.dumps(chosen, ensure_ascii=False))
    return chosen


def has_draft(page: str, obj: str) -> bool:
    """Whether the object has a stored draft (some edit not yet saved)."""
    with page_session() as session:
        return bool(get_draft(page, obj, session=session))


def clear_draft(page: str, obj: str, fields: tuple[str, ...]) -> None:
    """Forget a draft after its edits were saved (or discarded) and reset its boxes."""
    with page_session() as session:
        discard_draft(page, obj, session=session)
    for field in fields:
        st.session_state.pop(_state_key(page, obj, field), None)
        st.session_state.pop(_seen_key(_state_key(page, obj, field)), None)


_GUARD = """
<script>
(() => {
  const labels = new Set(%(labels)s);
  const message = %(message)s;
  const w = window;
  if (!w.__driftlensGuard) {
    const guard = { dirty: false, labels: new Set() };
    w.__driftlensGuard = guard;
    const guarded = (el) => el && el.matches && el.matches("textarea, input") &&
      guard.labels.has(el.getAttribute("aria-label"));
    document.addEventListener("input", (e) => { if (guarded(e.target)) guard.dirty = true; }, true);
    // In-app navigation is a click on a link: ask before the router sees it. Leaving
    // the box (mousedown on the link) commits its text, and Streamlit's rerun for that
    // commit cancels a page switch sent while it runs: follow the link once that rerun
    // (which stores the draft) is over.
    const idle = () => !document.querySelector(
      '[data-testid="stStatusWidgetRunningIcon"], [data-stale="true"]');
    document.addEventListener("click", (e) => {
      const link = e.target.closest && e.target.closest("a[href]");
      if (!link || !guard.dirty) return;
      e.preventDefault();
      e.stopImmediatePropagation();
      if (!w.confirm(message)) return;
      guard.dirty = false;
      const href = link.getAttribute("href");
      let waited = 0;
      const follow = () => {
        waited += 250;
        if (!idle() && waited < 15000) { w.setTimeout(follow, 250); return; }
        const again = Array.from(document.querySelectorAll("a[href]"))
          .find((a) => a.getAttribute("href") === href);
        (again || link).click();
      };
      w.setTimeout(follow, 750);
    }, true);
    w.addEventListener("beforeunload", (e) => {
      if (!guard.dirty) return;
      e.preventDefault();
      e.returnValue = message;
      return message;
    });
  }
  // A fresh render means the server has every committed edit (kept as a draft).
  w.__driftlensGuard.labels = labels;
  w.__driftlensGuard.dirty = false;
})();
</script>
<span data-render="%(nonce)s"></span>
"""


def leave_guard(labels: list[str]) -> None:
    """Ask before leaving the page while a box with one of these labels has unsent typing."""
    st.html(
        _GUARD
        % {
            "labels": json.dumps(labels),
            "message": json.dumps(LEAVE_MESSAGE),
            "nonce": time.monotonic_ns(),
        },
        unsafe_allow_javascript=True,
        width="content",
    )
