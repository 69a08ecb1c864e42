"""Memory conflicts, end to end: import banks, run a study (answers, policies, judges,
report) as a background job, read its report, open one case with both judges, push its
human study, download it all.

Thin over :mod:`study.conflicts.setup` (banks, the ``conflicts study`` command a job runs,
the report folder, every answer) and :mod:`study.conflicts.cases` (the case viewer). Bank,
request, answer and judge texts are untrusted: escaped Markdown, ``st.text`` or data frames.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import streamlit as st

from app.ui.calibration_panel import calibration_link
from app.ui.calibration_planner import planner_panel
from app.ui.checked_input import FormCheck
from app.ui.db import page_session, page_settings
from app.ui.figure_image import show_figure
from app.ui.job_follow import follow_job
from app.ui.job_panel import job_panel, start_job
from app.ui.model_picker import model_picker
from app.ui.page_stop import stop_with_info
from app.ui.safe import escape_markdown, inline_html, show_plain
from app.ui.self_judging import self_judging_checkbox
from app.ui.study_handoff import open_human_studies
from app.ui.table_downloads import folder_download, stats_download, table_downloads
from app.ui.url_state import url_open, url_select
from storage.errors import DriftLensError
from storage.repo.conflicts import list_conflict_banks
from study.conflicts.actions import is_abstention
from study.conflicts.cases import case_views, conflict_runs
from study.conflicts.items import import_bank_file
from study.conflicts.plan import parse_doses
from study.conflicts.setup import (
    POLICY_NAMES,
    ConflictStudy,
    answers_frame,
    import_banks_upload,
    read_report,
    report_folder,
    run_simulated,
    sim_judges,
    sim_responders,
    study_argv,
)
from study.judge_robustness.report import robustness_lines
from study.judge_robustness.result import stored_robustness
from study.model_choices import check_model

_COLOURS = {"core": "#1f5fa8", "background": "#777777", "distractor": "#c06000"}
_DIMS = ("d1", "d2", "d3", "d4", "d5")

st.title("Memory conflicts")
st.caption(
    "Each answer with the memory bank it saw (coloured by provenance, which the model never "
    "saw), and both judges side by side; cases where the judges differ by two points or more "
    "come first."
)
ws = page_settings().workspace

# ------------------------------------------------------------------ banks
with page_session() as session:
    n_banks = len(list_conflict_banks(session=session))
    runs = conflict_runs(session=session)
with st.expander(f"Memory banks ({n_banks} stored)", expanded=n_banks == 0):
    st.caption("A study answers every stored bank. Import the shipped sample or your own JSONL.")
    upload = st.file_uploader("Bank file (JSONL, one instance a line)", type=["jsonl"])
    left, right = st.columns(2)
    sample_clicked = left.button("Import the shipped sample banks", key="mc-sample")
    upload_clicked = right.button("Import the uploaded file", key="mc-import", disabled=not upload)
    if sample_clicked or (upload_clicked and upload is not None):
        try:
            with page_session() as session:
                if sample_clicked:
                    res = import_bank_file(None, session=session)
                else:
                    assert upload is not None
                    res = import_banks_upload(upload.name, upload.getvalue(), session=session)
        except DriftLensError as exc:
            show_plain(exc)
        else:
            st.session_state["mc-imported"] = (
                f"Imported {res.total} bank instance(s) from {res.source}: {res.inserted} new, "
                f"{res.updated} updated, {res.unchanged} unchanged."
            )
            st.rerun()
imported = st.session_state.pop("mc-imported", None)
if imported:
    show_plain(imported, kind="success")

# ------------------------------------------------------------------ set up and run
with st.expander("Run a study", expanded=not runs):
    model = model_picker("Response model", sim_responders(), key="mc-model")
    judges = st.multiselect(
        "Simulated judges",
        list(sim_judges()),
        list(sim_judges()),
        format_func=lambda j: f"{j} — {sim_judges()[j]}",
        key="mc-judges",
    )
    served_judge = st.text_input(
        "Served judge (optional, provider/model)", key="mc-served-judge", placeholder=""
    ).strip()
    a, b, c = st.columns(3)
    form = FormCheck()
    run_name = form.run_name("Run name", "my-conflicts", key="mc-run", where=a)
    doses_text = b.text_input("Distractor doses", "0,6", key="mc-doses", help="6, 0,6 or 0..6")
    samples = form.number("Samples per bank and dose", low=1, high=10, value=1,
                          key="mc-samples", where=c)  # fmt: skip
    policies = st.multiselect(
        "Policies answering the same banks (caap uses the response model as its backbone)",
        POLICY_NAMES,
        key="mc-policies",
    )
    bootstrap = form.number("Bootstrap replicates", low=200, high=100_000, value=1000,
                            key="mc-B")  # fmt: skip
    baseline = st.checkbox(
        "No-memory baseline (the same requests with an empty bank, judged alike)",
        True,
        key="mc-baseline",
        help="A rubric score means something against the model with no memory at all.",
    )
    allow_self = self_judging_checkbox(key="mc-self-judging")
    setup_panel = job_panel(kind="conflicts study", key="mc-setup-jobs")
    if st.button(
        "Run (answer, judge, report)",
        type="primary",
        key="mc-start",
        disabled=setup_panel.busy is not None or n_banks == 0 or not form.ok,
        help=form.why or (None if n_banks else "Import banks first."),
    ):
        presets = {**sim_responders(), **sim_judges()}
        try:
            all_judges = [*judges, *([served_judge] if served_judge else [])]
            study = ConflictStudy(
                run=run_name,
                model=check_model(model, env=os.environ, presets=sim_responders()),
                judges=tuple(check_model(j, env=os.environ, presets=presets) for j in all_judges),
                doses=parse_doses(doses_text),
                samples=int(samples),
                policies=tuple(policies),
                bootstrap=int(bootstrap),
                baseline=baseline,
                allow_self_judging=allow_self,
            )
            argv = study_argv(study, out=report_folder(ws, run_name))
        except DriftLensError as exc:
            show_plain(exc)
        else:
            if start_job(
                key="mc-setup-jobs",
                kind="conflicts study",
                title=f"Memory-conflicts study {run_name!r}",
                argv=argv,
                scope={"run": run_name},
            ):
                url_open("run", run_name)
                st.rerun()
    if setup_panel.finished is not None:
        st.rerun()

# ------------------------------------------------------------------ pick a run
names = [r.name for r in runs]
# A study just started (or a reload of its page) names its run before the job stored it.
follow_job(param="run", options=names, kind="conflicts study",
           scope_of=lambda run: {"run": run}, key="mc-follow")  # fmt: skip
if not runs:
    stop_with_info("No memory-conflict runs yet: import banks and run a study above.")
name = str(url_select("Run", names, param="run", what="run"))
panel = job_panel(kind="conflicts study", scope={"run": name}, key="mc-jobs")
if panel.finished is not None:
    st.rerun()
with page_session() as session:
    simulated = run_simulated(name, session=session)
if simulated:
    st.error("SIMULATED DATA: simulated response models and judges.")

# ------------------------------------------------------------------ results
st.subheader("Report")
folder = report_folder(ws, name)
report = read_report(folder)
if report is None:
    st.info("No report for this run yet (it is written when its study finishes).")
else:
    if report.figure is not None:
        show_figure(report.figure, caption="Distractor curve")
    for title, table, note in report.tables:
        st.markdown(f"**{escape_markdown(title)}**")
        if note:
            st.caption(note)
        st.dataframe(table, hide_index=True)

# ------------------------------------------------------------------ one case
st.subheader("One case, both judges")
only_stress = st.checkbox("Only cases where the judges differ by ≥ 2", value=False)
with page_session() as session:
    cases = case_views(name, session=session)
if only_stress:
    cases = [c for c in cases if c.max_gap >= 2]
if not cases:
    st.info("No judged answers in this run yet.")
else:
    st.metric("Judged answers", len(cases))
    with page_session() as session:
        robustness = stored_robustness("conflicts", name, session=session)
    st.markdown("**Judge robustness**")
    for line in robustness_lines([robustness] if robustness is not None else []):
        st.text(line)  # plain text: judge names are user input
    by_id = {c.response_id: c for c in cases}
    pick = url_select(
        "Case",
        list(by_id),
        param="case",
        what="case",
        format_func=lambda i: (
            f"{by_id[i].instance_id} · N{by_id[i].n_distractors} · gap {by_id[i].max_gap:g}"
        ),
        to_param=str,
    )
    case = by_id[int(str(pick))]
    st.markdown(
        f"**{escape_markdown(case.instance_id)}** · {escape_markdown(case.type)}"
        f"{' · high-risk' if case.high_risk else ''} · {case.n_distractors} distractor(s) · "
        f"bank observability {escape_markdown(case.observability)}"
    )
    st.markdown(f"**Request:** {escape_markdown(case.request)}")
    legend = " ".join(f"<span style='color:{c}'>■ {p}</span>" for p, c in _COLOURS.items())
    bank = "".join(
        f"<li style='color:{_COLOURS.get(p, '#000')}'>{inline_html(t)}</li>"
        for t, p in case.memories
    )
    st.markdown(f"{legend}<ul>{bank}</ul>", unsafe_allow_html=True)
    st.markdown("**Answer**")
    st.text(case.answer)
    cols = st.columns(max(1, len(case.judges)))
    for col, j in zip(cols, case.judges, strict=False):
        with col:
            st.markdown(
                f"**{escape_markdown(j.judge)}** ({escape_markdown(j.status)}) · action "
                f"{escape_markdown(j.action)}"
                + (" (an abstention: D3 not applicable)" if is_abstention(j.action) else "")
            )
            rows = [
                {
                    "dimension": d.upper(),
                    "score": "n/a" if j.scores.get(d) is None else f"{j.scores[d]:g}",
                    "quote": j.quotes.get(d, ""),
                }
                for d in _DIMS
            ]
            if case.high_risk:
                rows.append(
                    {"dimension": "D6", "score": j.d6 or "–", "quote": j.quotes.get("d6", "")}
                )
            st.dataframe(rows, hide_index=True)

# ------------------------------------------------------------------ human study
st.subheader("Human study")
if st.button("Score these answers by hand (conflict_rubric)", key="mc-h-rubric"):
    open_human_studies("conflict_rubric", [f"run={name}", "limit=60"])
calibration_link("conflict_rubric")
_cal_rows: list[dict] = []
if report is not None and report.stats is not None:
    _cal = json.loads(report.stats.read_text(encoding="utf-8")).get("calibrated") or {}
    _cal_rows = [
        {**r, "label": f"{r.get('model')} / {r.get('judge')} {r.get('what')}"}
        for r in _cal.get("rows", [])
    ]
planner_panel(_cal_rows, key="mc-plan", default=0.1)


# ------------------------------------------------------------------ downloads
st.subheader("Downloads")


def _answers() -> pd.DataFrame:
    with page_session() as session:
        return answers_frame([name], session=session)


table_downloads("Answers and scores", _answers, file_stem=f"{folder.name}-answers", key="mc-dl")
if report is not None:
    d1, d2 = st.columns(2)
    with d1:
        folder_download(
            "Report folder (.zip)", report.folder, file_name=f"{folder.name}.zip", key="mc-zip"
        )
    if report.stats is not None:
        with d2:
            stats_download(report.stats.read_bytes(), file_stem=folder.name, key="mc-stats")
