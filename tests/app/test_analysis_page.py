"""The Analysis page: the stored-analyses list, a new analysis, links, help, downloads, and
untrusted text kept inert."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

from sqlmodel import col, select
from streamlit.testing.v1 import AppTest

from storage.models import JudgeScore, Response
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.downloads import folder_zip
from study.reasoning.analysis import analyze_run
from study.reasoning.downloads import preferences_jsonl, responses_jsonl
from tests.analysis._sim_workspace import IMG_PROBE, LABELER, RUN, SCRIPT_PROBE, build_sim_workspace
from tests.app.apptest_support import open_page
from tests.study.jobs_support import wait_for_jobs

JUDGE = "sim/judge"


def _all_markdown(at: AppTest) -> list[str]:
    out = [m.value for m in at.markdown]
    for kind in (at.error, at.warning, at.info, at.success, at.caption):
        out += [str(e.value) for e in kind]
    return out


def _labels(at: AppTest) -> list[str]:
    return [str(getattr(b, "label", "")) for b in at.get("download_button")]


def _open_pairs(at: AppTest, analysis_id: int, shown: int = 10) -> None:
    """Open the first page's example pairs (their steps are built only once opened)."""
    for n in range(shown):
        at.session_state[f"pair-{analysis_id}-{n}"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def _analyse(workspace: Path, *, seed: int, out: str) -> int:
    with open_workspace_session(resolve_settings()) as session:
        result = analyze_run(
            RUN, LABELER, session=session, out_dir=workspace / out, bootstrap=200, seed=seed
        )
    return result.analysis_id


def _open_linked(params: dict[str, str]) -> AppTest:
    return open_page("analysis.py", timeout=180, params=params)


def test_page_shows_the_stored_analysis_with_untrusted_text_inert(workspace: Path) -> None:
    with open_workspace_session(resolve_settings()) as session:
        build_sim_workspace(session, n_questions=6)
    analysis_id = _analyse(workspace, seed=5, out="r")
    at = open_page("analysis.py", timeout=180)
    assert any("SIMULATED DATA" in str(e.value) for e in at.error)
    assert len(at.dataframe) >= 4
    assert not any(SCRIPT_PROBE in t.value for t in at.text)  # the pairs are still closed
    _open_pairs(at, analysis_id)
    rendered = _all_markdown(at)
    # live Markdown never holds the raw probes (every "<" is backslash-escaped, so no tag
    # can start); the escaped step text is there instead
    assert not [m for m in rendered if SCRIPT_PROBE in m or IMG_PROBE in m]
    assert not [m for m in rendered if re.search(r"(?<!\\)<img", m)]
    assert any("\\<img src\\=x onerror\\=alert\\(1\\)\\>" in m for m in rendered)
    # the question is shown, literally, as plain text
    assert any(SCRIPT_PROBE in t.value for t in at.text)
    assert "Download report.html" in _labels(at)


def test_stored_analyses_table_opens_the_newest_and_links_by_url(workspace: Path) -> None:
    with open_workspace_session(resolve_settings()) as session:
        build_sim_workspace(session, n_questions=5)
    first = _analyse(workspace, seed=1, out="r1")
    newest = _analyse(workspace, seed=2, out="r2")
    at = open_page("analysis.py", timeout=180)
    table = at.dataframe[0].value
    assert list(table["analysis"]) == [newest, first]
    assert list(table["run"]) == [RUN, RUN]
    assert set(table.columns) >= {"labeler", "ontology version", "B", "date (UTC)"}
    assert at.selectbox(key="shown_analysis").value == newest
    assert any(t.value.startswith(f"Analysis {newest} ·") for t in at.text)
    # the address names what is shown, so it can be linked
    assert at.query_params["analysis"] == [str(newest)] or at.query_params["analysis"] == str(
        newest
    )
    linked = _open_linked({"analysis": str(first)})
    assert linked.selectbox(key="shown_analysis").value == first
    assert any(t.value.startswith(f"Analysis {first} ·") for t in linked.text)
    by_run = _open_linked({"run": RUN, "labeler": LABELER})
    assert by_run.selectbox(key="shown_analysis").value == newest
    # An unknown id says so in one line (it used to open the newest silently).
    missing = _open_linked({"analysis": "999"})
    assert missing.selectbox(key="shown_analysis").value == newest
    assert [c.value for c in missing.caption if "999" in c.value] == ["unknown analysis '999'"]
    nothing = _open_linked({"run": "no-such-run"})
    assert nothing.selectbox(key="shown_analysis").value == newest
    assert [c for c in nothing.caption if "unknown analysis" in c.value and "no" in c.value]


def test_help_simulated_marks_and_downloads(workspace: Path) -> None:
    with open_workspace_session(resolve_settings()) as session:
        build_sim_workspace(session, n_questions=5)
    _analyse(workspace, seed=3, out="r")
    at = open_page("analysis.py", timeout=180)
    # column help for d_rel, letters and MDD travels with the conditions table
    conditions = next(d for d in at.dataframe if "d_rel" in d.value.columns)
    config = json.loads(conditions.proto.columns)
    assert {"d_rel", "letters", "mdd"} <= set(config)
    assert "noise" in config["d_rel"]["help"] and "80 %" in config["mdd"]["help"]
    assert any(t.value.startswith("letters: Compact letter display") for t in at.text)
    # every figure is marked simulated (a figure is built when its tab is chosen)
    for tab in ("Forest plot", "Tiers", "DTW vs SRI"):
        at.session_state["figure-tab"] = tab
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert sum("Simulated" in c.value for c in at.caption) == 1, tab
        assert at.get("image"), tab  # its figure is there
    labels = _labels(at)
    assert {"Report folder (.zip)", f"Responses of {RUN} (.jsonl)"} <= set(labels)
    # no judge scores and no verified benchmark yet: disabled, with the reason shown
    off = {b.key: b for b in at.button if b.disabled}
    assert "No judge has scored" in off["dl_preferences_off"].help
    assert "No core questions yet" in off["dl_benchmark_off"].help
    # what the downloads hold: the report folder, the run's responses
    names = zipfile.ZipFile(io.BytesIO(folder_zip(workspace / "r"))).namelist()
    assert "r/report.html" in names and "r/figures/forest.png" in names
    with open_workspace_session(resolve_settings()) as session:
        lines = responses_jsonl(RUN, session=session).decode().splitlines()
        assert len(lines) == session.exec(select(Response)).all().__len__()


def test_preference_pairs_download_once_a_judge_scored(workspace: Path) -> None:
    with open_workspace_session(resolve_settings()) as session:
        build_sim_workspace(session, n_questions=4)
    _analyse(workspace, seed=3, out="r")
    with open_workspace_session(resolve_settings()) as session:
        good, bad = session.exec(
            select(Response)
            .where(Response.condition != "baseline")
            .order_by(col(Response.question_id), col(Response.condition), col(Response.sample))
            .limit(2)
        ).all()
        assert (good.question_id, good.condition) == (bad.question_id, bad.condition)
        for resp, scores in ((good, (4, 0, 1)), (bad, (2, 1, 0))):
            for kind, value in zip(
                ("helpfulness", "distraction", "acknowledgement"), scores, strict=True
            ):
                session.add(
                    JudgeScore(response_id=resp.id or 0, judge_model=JUDGE, kind=kind, value=value)
                )
    at = open_page("analysis.py", timeout=180)
    assert "Preference pairs (.jsonl)" in _labels(at)
    assert at.selectbox(key="dl_judge").value == JUDGE
    with open_workspace_session(resolve_settings()) as session:
        pairs = preferences_jsonl(RUN, JUDGE, session=session).decode().splitlines()
    assert len(pairs) == 1 and json.loads(pairs[0])["judge_model"] == JUDGE


def test_new_analysis_is_set_apart_and_opens_when_stored(workspace: Path) -> None:
    with open_workspace_session(resolve_settings()) as session:
        build_sim_workspace(session, n_questions=5)
    at = open_page("analysis.py", timeout=180)
    assert any("No stored analysis yet" in str(i.value) for i in at.info)
    # the controls live in their own "New analysis" expander, not above what is shown
    assert [e.label for e in at.expander][:1] == ["New analysis"]
    next(n for n in at.number_input if n.label.startswith("Bootstrap")).set_value(200)
    next(b for b in at.button if b.label == "Run analysis").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (job,) = wait_for_jobs(resolve_settings())  # a background process, not the page run
    assert job.kind == "analyze" and job.state == "done", job
    at.run()
    assert any("stored and shown below" in str(s.value) for s in at.success)
    assert (workspace / "reports" / f"{RUN}-{LABELER}" / "report.html").is_file()
    assert any("Validity checks" in h.value for h in at.subheader)
    assert len(at.dataframe[0].value) == 1  # the stored-analyses table


def test_page_without_runs_says_what_to_do() -> None:
    at = open_page("analysis.py", timeout=180)
    assert any("Launch a run" in str(i.value) for i in at.info)  # the widget, not a CLI flag


def test_figures_are_drawn_from_the_statistics_once_the_report_folder_is_gone(
    workspace: Path,
) -> None:
    import shutil

    with open_workspace_session(resolve_settings()) as session:
        build_sim_workspace(session, n_questions=5)
    _analyse(workspace, seed=3, out="r")
    shutil.rmtree(workspace / "r")
    at = open_page("analysis.py", timeout=180)
    assert any("no longer on disk" in str(i.value) for i in at.info)
    for tab in ("Forest plot", "Tiers", "DTW vs SRI"):  # matplotlib draws each on its own
        at.session_state["figure-tab"] = tab
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.get("image"), tab


def test_judge_rates_calibrated_toggle_names_the_headline(workspace: Path) -> None:
    with open_workspace_session(resolve_settings()) as session:
        build_sim_workspace(session, n_questions=4)
    _analyse(workspace, seed=3, out="r")
    with open_workspace_session(resolve_settings()) as session:
        resp = session.exec(select(Response).where(Response.condition != "baseline")).first()
        assert resp is not None
        for kind, value in (("helpfulness", 3), ("distraction", 1), ("acknowledgement", 0)):
            session.add(
                JudgeScore(response_id=resp.id or 0, judge_model=JUDGE, kind=kind, value=value)
            )
    at = open_page("analysis.py", timeout=180)
    at.toggle(key="dl_judge_cal").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(_all_markdown(at)).replace("\\", "")  # shown as escaped plain text
    # no human study pulled: the judge's rate stays the headline, and each line says why
    assert "helpfulness: headline model-only (0 human labels of 1 responses)" in shown
    assert "no acknowledgement study pulled" in shown
