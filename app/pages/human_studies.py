"""Human studies: push a selection to Label Studio, follow progress, pull, agreement, apply.

Without a running server the page still works: *Start Label Studio* starts the workspace's
own (``annotation.server``), every server action says why it is disabled, the task count
of a selection is previewed, and the tasks download as JSON for offline annotation.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from annotation import server
from annotation.aggregate import AggregationConfig
from annotation.apply import apply_study, item_rows, study_status
from annotation.availability import availability
from annotation.client import LabelStudioClient, resolve_connection
from annotation.kinds import label_config, study_specs
from annotation.offline import TaskPreview, preview_tasks, tasks_json
from annotation.selection import Selection, parse_selection
from annotation.sync import ensure_project, pull, push, tasks_to_push
from app.ui.calibration_panel import calibration_panel
from app.ui.db import page_session, page_settings
from app.ui.safe import escape_markdown, show_plain
from app.ui.study_handoff import HANDOFF_KEY
from app.ui.url_state import url_open, url_select
from storage.errors import DriftLensError
from storage.repo.annotations import list_studies
from storage.repo.studies import count_study_tasks
from storage.workspace import counts_revision

st.title("Human studies")
st.caption(
    "Three annotators per item in Label Studio; a label holds when 2 of 3 agree; "
    "annotations made in under 10 s are dropped."
)

settings = page_settings()


def _client() -> LabelStudioClient:
    return LabelStudioClient(resolve_connection(settings.workspace))


def _fail(exc: DriftLensError) -> None:
    show_plain(exc)


# ------------------------------------------------------------------ connection
available = availability(settings.workspace)
# Every server action is disabled with this reason while Label Studio does not answer.
reason = available.reason
if available.ready:
    st.text(f"Label Studio: {available.url} ({available.source})")
else:
    show_plain(reason, kind="warning")
    if available.can_start and st.button(
        "Start Label Studio",
        type="primary",
        key="start_ls_button",
        help="Installs Label Studio on first use (about a minute), then starts it on "
        "127.0.0.1 for this workspace (as `driftlens labelstudio start`).",
    ):
        try:
            with st.spinner("Starting Label Studio (the first start installs it)…"):
                started = server.start(settings.workspace)
        except DriftLensError as exc:
            _fail(exc)
        else:
            st.session_state["ls_started"] = started.url
            st.rerun()
if "ls_started" in st.session_state:
    st.success(f"Label Studio started at {st.session_state.pop('ls_started')}.")


def _server_button(label: str, *, key: str, where: DeltaGenerator | None = None) -> bool:
    """A button that needs the server: disabled, with the reason shown, when it is down."""
    target = where if where is not None else st
    clicked = target.button(label, key=key, disabled=reason is not None, help=reason)
    if reason is not None:
        target.caption(f"Unavailable: {reason}")
    return bool(clicked)


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


@st.cache_data(max_entries=16, show_spinner=False)
def _preview(
    db_url: str, study: str, selection_json: str, revision: tuple[int, ...]
) -> TaskPreview:
    """The task count of a selection at one revision of the workspace's rows."""
    with page_session() as session:
        return preview_tasks(study, Selection.model_validate_json(selection_json), session=session)


def _revision() -> tuple[int, ...]:
    with page_session() as session:
        return counts_revision(session=session)


# ------------------------------------------------------------------ create & push
st.subheader("Create a study from a selection and push it")
# Another page (Validation's human check) may hand over a study and its selection.
handoff = st.session_state.pop(HANDOFF_KEY, None)
if handoff:
    url_open("kind", handoff["study"])
    st.session_state["push_selection"] = handoff["selection"]
st.session_state.setdefault("push_selection", "limit=50")
# ``?kind=`` names the study kind to push, ``?study=`` the pushed study below.
study = str(
    url_select(
        "Study",
        list(study_specs()),
        param="kind",
        what="study kind",
        format_func=lambda n: f"{study_specs()[n].title} ({n})",
        key="push_study",
    )
)
st.caption(study_specs()[study].summary)
selection_text = st.text_area(
    "Selection (one key=value per line)",
    help="Keys: questions, filter, tier, run, conditions, condition_class, catalog, labeler, "
    "ontology, dimension, limit, seed.",
    key="push_selection",
)
# How many tasks the selection makes, before anything is sent anywhere.
selection: Selection | None = None
try:
    selection = parse_selection([ln for ln in selection_text.splitlines() if ln.strip()])
    # Counting can take a moment on a large workspace (kinds without a keys-first path build
    # every task to count them); say so in the page (the status widget is hidden) and count
    # once per revision.
    with st.spinner("Counting the tasks this selection makes…", show_time=True):
        preview = _preview(settings.db_url, study, selection.model_dump_json(), _revision())
except DriftLensError as exc:
    selection_error: str | None = str(exc)
    show_plain(selection_error)
else:
    selection_error = None if preview.tasks else "This selection makes no task."
    limited = (
        f" ({preview.available} match; the limit keeps {preview.tasks})"
        if preview.available > preview.tasks
        else ""
    )
    st.text(f"This selection makes {preview.tasks} {study} tasks{limited}.")

push_col, export_col, config_col = st.columns(3)
if selection_error is not None and reason is None:
    push_col.button("Push to Label Studio", key="push_button", disabled=True, help=selection_error)
    push_col.caption(f"Unavailable: {selection_error}")
    pushed_now = False
else:
    pushed_now = _server_button("Push to Label Studio", key="push_button", where=push_col)
if pushed_now and selection is not None:
    try:
        client = _client()
        with st.spinner("Building the tasks and pushing them to Label Studio…", show_time=True):
            # Tasks first: a selection that makes none never creates a project.
            with page_session() as session:
                tasks = tasks_to_push(study, selection, session=session)
                project = ensure_project(study, client=client, session=session)
            with page_session() as session:
                pushed = push(study, tasks, client=client, session=session)
        st.success(
            f"{'Created' if project.created else 'Reused'} project {pushed.project_id}: "
            f"imported {pushed.imported} of {pushed.selected} tasks "
            f"({pushed.already_present} already there)."
        )
        st.text(f"Open {pushed.project_url}")
    except DriftLensError as exc:
        _fail(exc)

# Offline annotation: the tasks in Label Studio's import format, and the labeling config.
if selection is not None and selection_error is None:
    chosen_selection = selection

    def _tasks_file() -> bytes:
        with page_session() as session:
            return tasks_json(study, chosen_selection, session=session)

    export_col.download_button(
        "Download tasks (.json)",
        data=_tasks_file,
        file_name=f"{study}-tasks.json",
        mime="application/json",
        key="tasks_download",
        help="Label Studio's task import format, for annotating without this server.",
        on_click="ignore",  # a download needs no rerun of the page
    )
else:
    export_col.button(
        "Download tasks (.json)",
        key="tasks_download_off",
        disabled=True,
        help=selection_error or "Fix the selection first.",
    )
    export_col.caption(f"Unavailable: {selection_error or 'fix the selection first'}")
config_col.download_button(
    "Labeling config (.xml)",
    data=label_config(study),
    file_name=f"{study}-config.xml",
    mime="application/xml",
    key="config_download",
    help="The study's Label Studio labeling interface, to import the tasks with.",
    on_click="ignore",  # a download needs no rerun of the page
)

# ------------------------------------------------------------------ progress & pull
st.subheader("Progress and pull")
left, right = st.columns(2)
if _server_button("Show progress in Label Studio", key="progress_button", where=left):
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
if _server_button("Pull annotations", key="pull_button", where=right):
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
        for r in results:
            if r.note:  # a project made with an earlier form of its study
                show_plain(r.note, kind="warning")
    except DriftLensError as exc:
        _fail(exc)

# ------------------------------------------------------------------ agreement & apply
st.subheader("Agreement and apply")
pushed_names = sorted({s.name for s in studies})
if not pushed_names:
    st.info("Agreement appears once a study has been pushed and pulled.")
else:
    chosen = str(url_select("Study", pushed_names, param="study", key="agreement_study"))
    min_lead = st.number_input(
        "Drop annotations faster than (s)", min_value=0.0, value=10.0, key="min_lead"
    )
    min_ratings = st.number_input(
        "Ratings an item needs to count (rating studies: test_awareness)",
        min_value=1,
        value=2,
        step=1,
        key="min_ratings",
    )
    config = AggregationConfig(min_lead_time_s=float(min_lead), min_ratings=int(min_ratings))
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
            + (
                f" {status.items_with_min_ratings} of {status.tasks} tasks have at least "
                f"{status.min_ratings} ratings."
                if status.min_ratings is not None
                else ""
            )
        )
    except DriftLensError as exc:
        _fail(exc)
    calibration_panel(chosen, key="hs-calibration", server_reason=reason)
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
            # what each kind shows of its outcomes is its result type's own summary
            summary = result.summary()
            for part in summary.tables:
                if part.rows:
                    st.markdown(f"**{escape_markdown(part.title)}**")
                    st.dataframe(
                        pd.DataFrame(list(part.rows), columns=list(part.columns)),
                        hide_index=True,
                    )
            for line in summary.lines:
                show_plain(line, kind="success")
            st.dataframe(pd.DataFrame(rows), hide_index=True)
        except DriftLensError as exc:
            _fail(exc)
