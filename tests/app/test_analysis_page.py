"""The Analysis page: runs an analysis, shows the stored one, keeps untrusted text inert."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.reasoning.analysis import analyze_run
from tests.analysis._sim_workspace import IMG_PROBE, LABELER, RUN, SCRIPT_PROBE, build_sim_workspace
from tests.app.apptest_support import open_page


def _all_markdown(at: AppTest) -> list[str]:
    out = [m.value for m in at.markdown]
    for kind in (at.error, at.warning, at.info, at.success, at.caption):
        out += [str(e.value) for e in kind]
    return out


def test_page_shows_the_stored_analysis_with_untrusted_text_inert(workspace: Path) -> None:
    settings = resolve_settings()
    with open_workspace_session(settings) as session:
        build_sim_workspace(session, n_questions=6)
    with open_workspace_session(settings) as session:
        analyze_run(RUN, LABELER, session=session, out_dir=workspace / "r", bootstrap=200, seed=5)
    at = open_page("analysis.py", timeout=180)
    assert any("SIMULATED DATA" in str(e.value) for e in at.error)
    assert len(at.dataframe) >= 4
    rendered = _all_markdown(at)
    # live Markdown never holds the raw probes (every "<" is backslash-escaped, so no tag
    # can start); the escaped step text is there instead
    assert not [m for m in rendered if SCRIPT_PROBE in m or IMG_PROBE in m]
    assert not [m for m in rendered if re.search(r"(?<!\\)<img", m)]
    assert any("\\<img src\\=x onerror\\=alert\\(1\\)\\>" in m for m in rendered)
    # the question is shown, literally, as plain text
    assert any(SCRIPT_PROBE in t.value for t in at.text)
    assert any(
        getattr(b, "label", None) == "Download report.html" for b in at.get("download_button")
    )


def test_run_analysis_button_stores_and_shows_an_analysis(workspace: Path) -> None:
    with open_workspace_session(resolve_settings()) as session:
        build_sim_workspace(session, n_questions=5)
    at = open_page("analysis.py", timeout=180)
    assert any("No stored analysis" in str(i.value) for i in at.info)
    next(n for n in at.number_input if n.label.startswith("Bootstrap")).set_value(200)
    next(b for b in at.button if b.label == "Run analysis").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("stored" in str(s.value) for s in at.success)
    assert (workspace / "reports" / f"{RUN}-{LABELER}" / "report.html").is_file()
    assert any("Validity checks" in h.value for h in at.subheader)


def test_page_without_runs_says_what_to_do() -> None:
    at = open_page("analysis.py", timeout=180)
    assert any("Launch a run" in str(i.value) for i in at.info)  # the widget, not a CLI flag
