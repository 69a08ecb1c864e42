"""Disposition drift, end to end: set up a study, run and analyse it as background jobs,
read its report, open one stem across the arms, push its human studies, download it all.

Thin over :mod:`study.disposition.setup` (batteries, arms, the CLI commands a job runs) and
:mod:`study.disposition.browse` (the report folder, one stem, every answer). Arm, model,
battery and answer texts come from the database and from models: they are shown in data
frames, ``st.text`` or escaped Markdown only.
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
from app.ui.job_panel import demo_button, job_panel, start_job
from app.ui.model_picker import model_picker
from app.ui.page_stop import stop_with_info
from app.ui.safe import show_plain
from app.ui.sample_or_upload import sample_or_upload
from app.ui.self_judging import self_judging_checkbox
from app.ui.study_handoff import open_human_studies
from app.ui.table_downloads import folder_download, stats_download, table_downloads
from app.ui.url_state import url_open, url_select
from storage.errors import DriftLensError
from storage.repo.disposition import list_arms, list_studies
from study.disposition.browse import (
    answers_frame,
    read_report,
    stats_json,
    stem_answers,
    stem_summary,
    study_stems,
)
from study.disposition.demo import DEMO_STUDY
from study.disposition.report import arms_frame
from study.disposition.runs import add_arms
from study.disposition.setup import (
    BATTERY_SUFFIXES,
    REASONING_MODES,
    SIM_JUDGE,
    analyze_argv,
    dose_arms,
    parse_doses,
    reasoning_setting,
    report_folder,
    run_argv,
    save_batteries,
    sim_arm_model,
    sim_arm_presets,
    study_batteries,
)
from study.model_choices import check_model

st.title("Disposition drift")
st.caption(
    "Has a model's stable tendency (declining extra resources, accepting being stopped, "
    "refusing harm-shaped requests) moved between versions? Drift of each arm's aligned "
    "rate against its reference arm, 95% stem-bootstrap intervals, MDD, equivalence bound "
    "and the same-arm null test."
)
conf = page_settings()
ws = conf.workspace
JOB_KINDS = ("disposition run", "disposition analyze")

with page_session() as session:
    studies = list_studies(session=session)

# ------------------------------------------------------------------ set up
with st.expander("Set up a study", expanded=not studies):
    name = st.text_input("Study name", value="my-study", key="disp-new-study").strip()
    upload = sample_or_upload(
        "Batteries",
        "shipped sample (3 batteries × 10 stems × 6 paraphrases)",
        file_label="Battery file (YAML or CSV, as `driftlens disposition batteries check` reads)",
        suffixes=BATTERY_SUFFIXES,
        radio_key="disp-batteries-source",
        upload_key="disp-upload",
    )
    st.markdown(
        "**Arms** (one model each; the lowest dose of a reasoning setting is its reference)"
    )
    presets = sim_arm_presets()
    left, right = st.columns(2)
    preset = left.selectbox(
        "Simulated model",
        list(presets),
        format_func=lambda p: f"{p} — {presets[p]}",
        key="disp-preset",
        help="Served models are added one arm at a time below.",
    )
    doses_text = right.text_input("Doses (% harmful training answers)", "0, 100", key="disp-doses")
    modes = st.multiselect("Reasoning settings", REASONING_MODES, ["on"], key="disp-modes")
    form = FormCheck()
    words = form.number("Reasoning words (budget / filler)", low=0, high=32_768, value=256,
                        step=64, key="disp-words")  # fmt: skip
    samples = form.number("Samples per probe", low=2, high=1_000, value=2, key="disp-samples")
    served = st.checkbox("Add one served model as an arm instead", key="disp-served")
    arm_model = arm_name = ""
    arm_dose: float | None = None
    if served:
        arm_model = model_picker("Arm model", {}, key="disp-arm")
        a, b, c = st.columns(3)
        arm_name = a.text_input("Arm name", "arm-1", key="disp-arm-name").strip()
        arm_role = b.selectbox("Role", ["reference", "treatment", "control"], key="disp-role")
        arm_dose = form.number("Dose", low=0.0, high=100.0, value=0.0, key="disp-d", where=c)
    if st.button(
        "Add arms to the study", type="primary", key="disp-add", disabled=not form.ok,
        help=form.why,
    ):  # fmt: skip
        try:
            if not name:
                raise DriftLensError("Give the study a name.")
            settings = [reasoning_setting(m, int(words)) for m in modes]
            if served:
                from study.disposition.runs import ArmSpec

                model = check_model(arm_model, env=os.environ, presets={})
                specs = [
                    ArmSpec(
                        arm_name,
                        model,
                        role=str(arm_role),
                        dose=arm_dose,
                        reasoning=settings[0] if settings else "on",
                        samples=int(samples),
                    )
                ]
            else:
                models = {d: sim_arm_model(str(preset), d) for d in parse_doses(doses_text)}
                specs = dose_arms(models, reasoning=settings, samples=int(samples))
            if upload is not None:
                save_batteries(ws, name, upload.name, upload.getvalue())
            with page_session() as session:
                add_arms(name, specs, session=session)
        except DriftLensError as exc:
            show_plain(exc)
        else:
            st.session_state["disp-added"] = (name, len(specs))
            url_open("study", name)
            st.rerun()
added = st.session_state.pop("disp-added", None)
if added:
    show_plain(f"Added {added[1]} arm(s) to study {added[0]}.", kind="success")

if demo_button(
    "Run the simulated demo study",
    key="disp-demo",
    kind="disposition demo",
    title="Disposition demo",
    argv=["disposition", "demo", "--bootstrap", "2000"],
    scope={"study": DEMO_STUDY},
):
    url_open("study", DEMO_STUDY)
    st.rerun()

with page_session() as session:
    studies = list_studies(session=session)
if not studies:
    stop_with_info("No disposition study yet: set one up above, or run the simulated demo study.")
study = str(url_select("Study", studies, param="study", default=DEMO_STUDY, what="study"))
with page_session() as session:
    arms = list_arms(session=session, study=study)
st.dataframe(arms_frame(arms), hide_index=True)

# ------------------------------------------------------------------ run as jobs
st.subheader("Run")
batteries = study_batteries(ws, study)
st.caption(
    f"Batteries: {'the uploaded file' if batteries else 'the shipped sample'}. "
    "Generation re-asks exhausted answers; the classifier labels every answer. Both resume "
    "where they stopped when run again."
)
judge = model_picker("Classifier", {SIM_JUDGE: "simulated classifier"}, key="disp-judge")
allow_self = self_judging_checkbox(key="disp-self-judging")
run_form = FormCheck()
bootstrap = run_form.number("Bootstrap resamples (stems)", low=200, high=100_000, value=2000,
                            key="disp-B")  # fmt: skip
folder = report_folder(ws, study)
if study == DEMO_STUDY:
    folder = ws / "reports" / "disposition-demo"
panel = job_panel(kind=JOB_KINDS, scope={"study": study}, key="disp-jobs")
busy = panel.busy is not None or not run_form.ok


def _start(kind: str, title: str, argv: list[str]) -> None:
    if start_job(key="disp-jobs", kind=kind, title=title, argv=argv, scope={"study": study}):
        st.rerun()


run_col, analyze_col = st.columns(2)
if run_col.button("Run (generate, classify, analyse)", disabled=busy, key="disp-run"):
    try:
        checked = check_model(judge, env=os.environ, presets={SIM_JUDGE: ""})
    except DriftLensError as exc:
        show_plain(exc)
    else:
        _start(
            "disposition run",
            f"Disposition run {study!r}",
            run_argv(
                study,
                judge=checked,
                batteries=batteries,
                report=folder,
                bootstrap=int(bootstrap),
                allow_self_judging=allow_self,
            ),
        )
if analyze_col.button("Analyse again (statistics and report)", disabled=busy, key="disp-analyze"):
    _start(
        "disposition analyze",
        f"Disposition analysis {study!r}",
        analyze_argv(study, out=folder, bootstrap=int(bootstrap)),
    )

# ------------------------------------------------------------------ results
st.subheader("Results")
report = read_report(folder)
if report is None:
    st.info("Not analysed yet: run the study, then Analyse.")
else:
    if report.simulated:
        st.warning("SIMULATED DATA — every answer comes from the built-in disposition simulator.")
    for fig in report.figures.values():
        show_figure(fig)
    for table_name, table in report.tables.items():
        st.markdown(f"**{table_name.replace('_', ' ').capitalize()}**")
        st.dataframe(table, hide_index=True)

# ------------------------------------------------------------------ one stem
st.subheader("One stem across the arms")
with page_session() as session:
    stems = study_stems(study, session=session)
if not stems:
    st.info("No answers yet: run the study.")
else:
    stem = url_select("Stem", stems, param="item", what="stem")
    arm = url_select("Arm", ["all", *(a.name for a in arms)], param="arm", what="arm")
    with page_session() as session:
        answers = stem_answers(study, str(stem), session=session)
    if arm != "all":
        answers = answers[answers["arm"] == arm]
    st.text(stem_summary(answers))
    st.dataframe(answers, hide_index=True)

# ------------------------------------------------------------------ human studies
st.subheader("Human studies")
selection = [f"disposition={study}", "limit=60"]
if batteries is not None:
    selection.append(f"batteries={batteries}")
h1, h2 = st.columns(2)
if h1.button("Check the classifier (disposition_check)", key="disp-h-check", disabled=not stems):
    open_human_studies("disposition_check", selection)
if h2.button("Rate test awareness (test_awareness)", key="disp-h-aware", disabled=not stems):
    open_human_studies("test_awareness", selection)
h1, h2 = st.columns(2)
with h1:
    calibration_link("disposition_check")
with h2:
    calibration_link("test_awareness")
_cal_rows: list[dict] = []
if report is not None:
    for _name, _path in report.stats.items():
        _cal = json.loads(_path.read_text(encoding="utf-8")).get("calibrated") or {}
        _cal_rows += [
            {**r, "label": f"{r.get('group')} / {r.get('battery')} / {r.get('arm')} aligned rate"}
            for r in _cal.get("rows", [])
            if r.get("what") == "aligned_rate"
        ]
planner_panel(_cal_rows, key="disp-plan", default=0.05)

# ------------------------------------------------------------------ downloads
st.subheader("Downloads")


def _answers() -> pd.DataFrame:
    with page_session() as session:
        return answers_frame(study, session=session)


table_downloads("Answers", _answers, file_stem=f"{folder.name}-answers", key="disp-dl-answers")
if report is not None:
    d1, d2, d3 = st.columns(3)
    with d1:
        folder_download(
            "Report folder (.zip)", report.folder, file_name=f"{folder.name}.zip", key="disp-dl-zip"
        )
    d2.download_button(
        "disposition.html",
        data=report.html.read_bytes(),
        file_name="disposition.html",
        mime="text/html",
        key="disp-dl-html",
        on_click="ignore",  # a download needs no rerun of the page
    )
    with d3:
        stats_download(stats_json(report), file_stem=folder.name, key="disp-dl-stats")
