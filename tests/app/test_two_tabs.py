"""Two tabs of one workspace (issue #20 K): a finished round's banner appears in both, not
only in the one that reran first; two tabs editing one leaf share its draft, and the tab about
to overwrite the other's says so (the later commit used to replace the earlier silently)."""

from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from tests.app.apptest_support import open_page, unescape


def _definition(at: AppTest) -> object:
    return next(t for t in at.text_area if t.label == "Definition")


def test_a_tab_whose_draft_another_tab_changed_is_told() -> None:
    first, second = open_page("ontology_versions.py"), open_page("ontology_versions.py")
    assert not second.warning
    _definition(first).set_value("Typed in the first tab.").run()  # type: ignore[attr-defined]
    assert not [w for w in first.warning if "Another tab" in w.value]
    second.run()  # any rerun of the other tab (a click, a rerun)
    notices = [unescape(w.value) for w in second.warning if "Another tab" in w.value]
    assert len(notices) == 1 and "23 characters there" in notices[0]
    # The second tab commits its own text: it replaces the draft, and now the first is told.
    _definition(second).set_value("Typed in the second tab.").run()  # type: ignore[attr-defined]
    assert not [w for w in second.warning if "Another tab" in w.value]
    first.run()
    assert [w for w in first.warning if "Another tab" in w.value]


def test_the_round_banner_appears_in_every_tab_that_saw_the_round_run() -> None:
    from tests.app.test_ontology_pages import _small_run

    _small_run()
    starter, watcher = open_page("ontology_rounds.py"), open_page("ontology_rounds.py")
    starter.multiselect(key="labelers").set_value(["sim", "keywords"])
    starter.number_input(key="sample").set_value(20)
    next(b for b in starter.button if b.label == "Run round").click()
    shown = {"starter": 0, "watcher": 0}
    deadline = time.monotonic() + 240  # a background round; it timed out at 60 s under load
    # Both tabs rerun (their progress boxes do every second) until each showed the banner;
    # the first tab to rerun after the end used to be the only one to see it.
    while min(shown.values()) == 0 and time.monotonic() < deadline:
        for name, tab in (("starter", starter), ("watcher", watcher)):
            tab.run()
            shown[name] += sum("Round 1" in s.value for s in tab.success)
        time.sleep(0.3)
    for tab in (starter, watcher):
        tab.run()
        shown[name] += sum("Round 1" in s.value for s in tab.success)
    assert shown == {"starter": 1, "watcher": 1}  # every tab, once
