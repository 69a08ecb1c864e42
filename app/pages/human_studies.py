"""Human studies: push a selection to Label Studio, follow progress, pull, agreement, apply."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotation.aggregate import AggregationConfig
from annotation.apply import apply_study, item_rows, study_status
from annotation.client import LabelStudioClient, LabelStudioConnection, resolve_connection
from annotation.studies import STUDIES
from annotation.sync import ensure_project, pull, push
from annotation.tasks import parse_selection
from app.ui.db import page_session, page_settings
from app.ui.safe import escape_markdown
from storage.errors import DriftLensError
from storage.repo.annotations import list_studies
from storage.repo.studies import count_study_tasks

st.title("Human studies")
st.caption(
    "Three annotators per item in Label Studio; a label holds when 2 of 3 agree; "
    "annotations made in under 10 s are dropped."
)

settings = page_settings()


def _client() -> LabelStudioClient:
    return LabelStudioClient(resolve_connection(settings.workspace))


def _fail(exc: DriftLensError) -> None:
    st.error(escape_markdown(str(exc)))


# ------------------------------------------------------------------ connection
conn: LabelStudioConnection | None
try:
    conn = resolve_connection(settings.workspace)
    st.text(f"Label Studio: {conn.url} ({conn.source})")
except DriftLensError as exc:
    conn = None
    st.info(escape_markdown(str(exc)))

# ------------------------------------------------------------------ local studies
with page_session() as session:
    studies = list_studies(session=session)
    overview = [
        {
            "study": s.name,
            "project": s.ls_project_id,
            "server": s.ls_url,
            "tasks": count_study_tasks(s.id, session=session) if s.id is not None else 0,
        }
        for s in studies
    ]
st.subheader("Studies")
if overview:
    st.dataframe(pd.DataFrame(overview), hide_index=True)
else:
    st.info("No study pushed yet: choose one below and push a selection.")

# ------------------------------------------------------------------ create & push
st.subheader("Create a study from a selection and push it")
study = st.selectbox(
    "Study",
    list(STUDIES),
    format_func=lambda n: f"{STUDIES[n].title} ({n})",
    key="push_study",
)
st.caption(STUDIES[study].summary)
selection_text = st.text_area(
    "Selection (one key=value per line)",
    value="limit=50",
    help="Keys: questions, filter, tier, run, conditions, condition_class, catalog, labeler, "
    "ontology, dimension, limit, seed.",
    key="push_selection",
)
if st.button("Push to Label Studio", key="push_button", disabled=conn is None):
    try:
        selection = parse_selection([ln for ln in selection_text.splitlines() if ln.strip()])
        client = _client()
        with page_session() as session:
            project = ensure_project(study, client=client, session=session)
        with page_session() as session:
            pushed = push(study, selection, client=client, session=session)
        st.success(
            f"{'Created' if project.created else 'Reused'} project {pushed.project_id}: "
            f"imported {pushed.imported} of {pushed.selected} tasks "
            f"({pushed.already_present} already there)."
        )
        st.text(f"Open {pushed.project_url}")
    except DriftLensError as exc:
        _fail(exc)

# ------------------------------------------------------------------ progress & pull
st.subheader("Progress and pull")
left, right = st.columns(2)
if left.button("Show progress in Label Studio", key="progress_button", disabled=conn is None):
    try:
        client = _client()
        for s in studies:
            if s.ls_project_id is None:
                continue
            p = client.get_project(s.ls_project_id)
            done = p.num_tasks_with_annotations / p.task_number if p.task_number else 0.0
            st.progress(
                min(done, 1.0),
                text=f"{s.name}: {p.num_tasks_with_annotations}/{p.task_number} tasks started, "
                f"{p.total_annotations_number} annotations",
            )
    except DriftLensError as exc:
        _fail(exc)
if right.button("Pull annotations", key="pull_button", disabled=conn is None):
    try:
        with page_session() as session:
            results = pull(None, client=_client(), session=session)
        st.success(f"Pulled {len(results)} studies.")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "study": r.study,
                        "annotations": r.annotations,
                        "new": r.inserted,
                        "updated": r.updated,
                        "unchanged": r.unchanged,
                    }
                    for r in results
                ]
            ),
            hide_index=True,
        )
    except DriftLensError as exc:
        _fail(exc)

# ------------------------------------------------------------------ agreement & apply
st.subheader("Agreement and apply")
pushed_names = sorted({s.name for s in studies})
if not pushed_names:
    st.info("Agreement appears once a study has been pushed and pulled.")
else:
    chosen = st.selectbox("Study", pushed_names, key="agreement_study")
    min_lead = st.number_input(
        "Drop annotations faster than (s)", min_value=0.0, value=10.0, key="min_lead"
    )
    config = AggregationConfig(min_lead_time_s=float(min_lead))
    try:
        with page_session() as session:
            status = study_status(chosen, session=session, config=config)
        a, b, c, d = st.columns(4)
        a.metric("Tasks", status.tasks)
        b.metric("Annotations", status.annotations)
        c.metric(
            "Krippendorff's alpha",
            "n/a" if status.krippendorff_alpha is None else f"{status.krippendorff_alpha:.3f}",
        )
        d.metric(
            "Disagreement rate",
            "n/a" if status.disagreement_rate is None else f"{status.disagreement_rate:.3f}",
        )
        st.text(
            f"{len(status.annotators)} annotators; {status.dropped_fast} annotations dropped "
            f"as too fast; {status.items_with_label} items with a 2-of-3 label, "
            f"{status.items_unanimous} unanimous."
        )
    except DriftLensError as exc:
        _fail(exc)
    if st.button("Apply results", key="apply_button"):
        try:
            with page_session() as session:
                result = apply_study(chosen, session=session, config=config)
            rows = []
            for item in item_rows(result.aggregate):
                for q, o in item["questions"].items():
                    rows.append(
                        {
                            "task": item["key"],
                            "question": q,
                            "votes": ", ".join(f"{a}: {v}" for a, v in o["votes"].items()),
                            "label (2 of 3)": o["label"],
                            "unanimous": o["unanimous"],
                            "task disagreement": item["disagreement_rate"],
                        }
                    )
            if result.tiers:
                t = result.tiers
                st.success(
                    f"Tiers: {t['core']} core, {t['relaxed']} relaxed, {t['none']} not in the "
                    f"benchmark ({len(result.tier_changes)} changed)."
                )
            if result.orthogonality:
                kept = sum(1 for o in result.orthogonality if o.keep)
                st.success(f"Orthogonality: {kept} of {len(result.orthogonality)} kept.")
            for title, groups in (
                ("LLM-label accuracy", result.labeler_accuracy),
                ("Helpfulness", result.helpfulness),
                ("Non-distraction rate", result.non_distraction),
            ):
                if groups:
                    st.markdown(f"**{title}**")
                    st.dataframe(pd.DataFrame([g.__dict__ for g in groups]), hide_index=True)
            st.dataframe(pd.DataFrame(rows), hide_index=True)
        except DriftLensError as exc:
            _fail(exc)
