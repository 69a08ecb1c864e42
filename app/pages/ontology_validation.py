"""Validation experiments of the ontology: started here, run in the background, results kept."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pandas as pd
import streamlit as st
from sqlmodel import select

from app.ui.calibration_panel import calibration_link
from app.ui.checked_input import FormCheck
from app.ui.db import page_session, page_settings
from app.ui.job_panel import job_panel, start_job
from app.ui.labeler_choices import describe_labeler, labeler_options
from app.ui.page_stop import stop_with_info
from app.ui.safe import escape_markdown, plain_message, show_plain
from app.ui.self_judging import self_judging_checkbox
from app.ui.study_handoff import open_human_studies
from app.ui.url_state import url_open, url_select
from llm.specs import parse_spec, resolve_endpoint, spec_simulated
from ontology.rounds import round_history
from ontology.validation import ValidationReport
from ontology.validation_runs import (
    EXPERIMENTS,
    StoredResult,
    parse_request,
    stored_results,
)
from ontology.working_round import experiment_rounds, working_round
from storage.errors import DriftLensError
from storage.models import LabelerSpec, ModelSpecRow
from study.reasoning.run_choices import reasoning_runs, runs_with_steps

st.title("Validation experiments")
st.caption(
    "Check the ontology itself (SPEC §5): labels that stay put when asked again, when the "
    "definitions are reworded, and under the original-style ontology; and a human check of "
    "a labeler's labels. Experiments run in the background: leaving this page does not stop "
    "them, and their results are kept in the workspace's validation/ folder."
)


def _is_model_spec(spec: str) -> bool:
    try:
        parse_spec(spec)
    except DriftLensError:
        return False
    return True


settings = page_settings()

# A spinner after half a second: the rounds and runs take seconds on a large workspace.
with st.spinner("Reading the rounds and runs…", show_time=True), page_session() as session:
    history = round_history(session=session)
    runs = reasoning_runs(session=session)  # memory-conflict runs have no steps to label
    with_steps = runs_with_steps(runs, session=session)
    used = [s.name for s in session.exec(select(LabelerSpec)).all() if s.name]
    # a stored row that is no model spec (a memory-conflict policy's "policy/…") paraphrases
    # nothing: only specs that parse are offered
    models = sorted(
        {m.spec for m in session.exec(select(ModelSpecRow)).all() if _is_model_spec(m.spec)}
    )


def _unreachable(spec: str) -> str | None:
    """Why ``spec``'s endpoint cannot be reached from this server (``None`` when it can)."""
    try:
        info = parse_spec(spec)
        if info.over_http:
            resolve_endpoint(info)
    except DriftLensError as exc:
        needs = re.search(r"needs (\w+)", str(exc))
        return f"needs {needs.group(1)}" if needs else str(exc)
    return None


panel = job_panel(kind="ontology validate run", key="validation")
if panel.finished is not None and (panel.finished.result or {}).get("result"):
    show_plain(f"{panel.finished.title} finished; its result is shown below.", kind="success")
    st.session_state["validation_shown"] = (panel.finished.result or {})["result"]
busy = panel.busy

st.subheader("Start an experiment")
experiment = str(
    url_select(
        "Experiment",
        list(EXPERIMENTS),
        param="experiment",
        format_func=lambda name: f"{name} — {EXPERIMENTS[name]}",
        key="experiment",
        widget=st.radio,
    )
)
numbers = [h.round for h in history if h.status == "done"]
# The loop's newest finished round, not one a cross experiment made on the original ontology.
loop_round = working_round(
    [h for h in history if h.status == "done"],
    exclude=experiment_rounds(workspace=settings.workspace),
)
labelers_of = {h.round: list(h.labelers) for h in history}
values: dict[str, Any] = {"experiment": experiment}
form = FormCheck()  # the launch form's number boxes, checked before the button
if experiment in ("stability", "robustness", "human"):
    if not numbers:
        st.info("No finished round yet: run one on the Rounds page first.")
    c1, c2 = st.columns(2)
    number = url_select(
        "Round", numbers, param="round", default=loop_round, key="v-round", widget=c1.selectbox
    )
    choices = labeler_options([*labelers_of.get(number or 0, []), *used])
    values["round"] = number
    values["labeler"] = c2.selectbox(
        "Labeler",
        choices,
        index=choices.index(labelers_of[number][0]) if number in labelers_of else 0,
        format_func=describe_labeler,
        accept_new_options=True,
        key=f"v-labeler-{number}",
        help="Type an llm:provider/model spec to use a labeler not in the list.",
    )
    if experiment == "stability":
        values["temperature"] = form.number(
            "Temperature", low=0.0, high=2.0, value=1.0, step=0.1, key="v-t"
        )
        st.caption("Only llm: labelers sample; the offline ones give the same labels twice.")
    elif experiment == "robustness":
        # The offline simulator first and by default; a stored model whose endpoint is not
        # configured here is listed last, saying which variable it needs.
        unreachable = {m: why for m in models if (why := _unreachable(m))}
        paraphrasers = list(
            dict.fromkeys(
                ["sim/default", *(m for m in models if m not in unreachable), *unreachable]
            )
        )
        values["model"] = st.selectbox(
            "Model that paraphrases the definitions",
            paraphrasers,
            # an endpoint that is not configured is said first: a served simulator whose
            # URL is missing cannot paraphrase anything either
            format_func=lambda m: (
                f"{m} (not configured: {unreachable[m]})"
                if m in unreachable
                else f"{m} (simulated)"
                if spec_simulated(m)
                else m
            ),
            accept_new_options=True,
            key="v-model",
            help="Any provider/model; type one to add it.",
        )
    else:
        values["limit"] = form.number(
            "Labels to check", low=1, high=1_000_000, value=100, step=10, key="v-limit"
        )
else:
    if not runs:
        st.info("No generation run yet: launch one on the Runs page.")
    if runs and not with_steps:
        st.warning("No run has parsed steps yet: generate one on the Runs page first.")
    values["run"] = url_select(
        "Generation run",
        runs,
        param="run",
        default=with_steps[0] if with_steps else None,
        key="v-run",
        format_func=lambda r: r if r in with_steps else f"{r} (no parsed steps)",
    )
    values["labelers"] = st.multiselect(
        "Labelers (two or more)",
        labeler_options(used),
        default=["sim", "keywords"],
        format_func=describe_labeler,
        accept_new_options=True,
        key="v-labelers",
    )
    c1, c2 = st.columns(2)
    values["sample"] = form.number("Responses", low=1, high=1_000_000, value=100, step=10,
                                   key="v-n", where=c1)  # fmt: skip
    values["seed"] = form.number("Seed", low=0, high=2**32 - 1, value=0, key="v-seed", where=c2)
    st.caption("Stores one round per ontology (they appear on the Rounds page).")
if experiment != "human":  # the human check labels nothing
    values["allow_self_judging"] = self_judging_checkbox(key="v-self-judging")

if st.button(
    "Start experiment",
    disabled=busy is not None or not form.ok,
    help=busy or form.why or "Run it in the background; the result is kept in the workspace.",
):
    try:
        request = parse_request(values)
    except DriftLensError as exc:
        show_plain(exc)
    else:
        # A background process: ``driftlens ontology validate run --request JSON``.
        if start_job(
            key="validation",
            kind="ontology validate run",
            title=f"Experiment {request.summary()}",
            argv=[
                "ontology",
                "validate",
                "run",
                "--request",
                json.dumps(request.model_dump(mode="json"), sort_keys=True),
            ],
            scope={"experiment": request.experiment},
        ):
            st.rerun()
if busy is not None:
    st.caption(plain_message(f"Start experiment is disabled: {busy}"))


def _headline(report: ValidationReport) -> str:
    """The result in a few words: agreement (one row) or mean agreement per ontology."""

    def pct(value: Any) -> str:
        return "n/a" if value is None or math.isnan(float(value)) else f"{float(value):.1f}%"

    if report.experiment == "human":
        return "ready to push to Label Studio"
    if report.experiment == "cross":
        return ", ".join(
            f"{r['ontology_version']}: {pct(r.get('mean_pairwise'))}" for r in report.rows
        )
    return f"agreement {pct(report.rows[0].get('agreement'))}" if report.rows else "no rows"


st.subheader("Results")
results, problems = stored_results(workspace=settings.workspace)
for line in problems:
    show_plain(line, kind="warning")
if not results:
    stop_with_info("No experiment has finished in this workspace yet.")

st.dataframe(
    pd.DataFrame(
        [
            {
                "finished (UTC)": r.finished_at.strftime("%Y-%m-%d %H:%M:%S"),
                "experiment": r.request.summary(),
                "result": _headline(r.report),
                "reference": r.report.reference,
            }
            for r in results
        ]
    ),
    hide_index=True,
    width="stretch",
)
names = [r.path.name for r in results]
wanted = st.session_state.pop("validation_shown", None)
if wanted in names:
    url_open("result", wanted)  # a finished experiment opens its result
by_name: dict[str, StoredResult] = {r.path.name: r for r in results}
shown = str(
    url_select(
        "Result",
        names,
        param="result",
        format_func=lambda n: (
            f"{by_name[n].finished_at:%Y-%m-%d %H:%M:%S} · {by_name[n].request.summary()}"
        ),
        key="v-shown",
    )
)
result = by_name[shown]
st.markdown(
    f"**{escape_markdown(result.report.description)}** ({escape_markdown(result.report.reference)})"
)
st.dataframe(pd.DataFrame(list(result.report.rows)), hide_index=True, width="stretch")
for note in result.report.notes:
    st.caption(plain_message(f"Note: {note}"))
if result.report.experiment == "human":
    hand_off = result.report.rows[0]
    if st.button("Push on the Human studies page", key="v-human-push", type="primary"):
        open_human_studies("label_check", [str(item) for item in hand_off["select"]])
    st.caption("It opens with the label_check study and this selection filled in. The CLI:")
    st.code(str(hand_off["command"]), language=None)
    calibration_link("label_check")
