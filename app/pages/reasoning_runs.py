"""Reasoning drift's section of the Runs page: launch a generation run, browse one run.

Not a page of its own: the shared Runs page (``app/pages/runs.py``) draws it through
reasoning drift's ``runs_panel`` part, under every instrument's listing of runs. ``?run=``
(and ``?question=``, ``?condition=``) open a linked view of one run.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui.checked_input import FormCheck
from app.ui.db import page_session, page_settings
from app.ui.job_panel import job_panel, start_job
from app.ui.safe import escape_markdown, inline_html, show_plain
from app.ui.url_state import url_select
from llm.specs import parse_spec
from ontology.schema import load_seed
from storage.errors import DriftLensError
from storage.repo.runs import check_run_name, list_runs
from study.questions import import_sample_questions
from study.reasoning.browse import (
    ResponseView,
    RunOverview,
    question_responses,
    response_page,
    run_overview,
    run_revision,
)
from study.reasoning.run_choices import reasoning_runs

# One colour per ontology root (document order); unmapped is grey.
_ROOT_COLOURS = dict(
    zip(
        [r.name for r in load_seed().roots],
        ["#4477AA", "#228833", "#CC6677", "#AA7700"],
        strict=True,
    )
)


@st.cache_data(max_entries=64, show_spinner=False)
def _overview(db_url: str, run: str, revision: tuple[str, str, int, int]) -> RunOverview:
    """The overview of one run revision (recomputed only when the run changed)."""
    with page_session() as session:
        return run_overview(run, session=session)


def runs_panel() -> None:
    """The launch form (a background generate-and-label job), then one run's browser."""
    _launch_form()
    _browse()


def _launch_form() -> None:
    # Running generations show outside the (closed) expander: a reload finds them here.
    panel = job_panel(kind="generate", key="runs-generate")
    # One slot, drawn every run, so the launch form below keeps its place (and stays open)
    # whether or not a job's end is shown.
    with st.container(key="runs-generate-notice"):
        if panel.finished is not None:
            show_plain(f"{panel.finished.title}: done.", kind="success")
    with st.expander("Launch a run", expanded=False):
        st.caption(
            "sim/… models run in-process; openai-api/<service>/<model> reads "
            "<SERVICE>_BASE_URL and <SERVICE>_API_KEY from the environment."
        )
        model = st.text_input("Model", value="sim/default")
        name = st.text_input("Run name", value="sim-run")
        try:  # the service's own check, said under the field before anything can start
            check_run_name(name)
            name_error = None
        except DriftLensError as exc:
            name_error = exc
            show_plain(exc)  # echoes typed input: plain text
        selection = st.text_input(
            "Perturbations (all, none, a class, a category, keys)", value="all"
        )
        form = FormCheck()
        samples = form.number("Samples", low=1, high=10, value=2, key="runs-samples")
        blocked = (str(name_error) if name_error else None) or form.why
        if st.button(
            "Generate and label",
            disabled=panel.busy is not None or name_error is not None or not form.ok,
            help=panel.busy or blocked,
        ):
            try:
                parse_spec(model)  # a bad model name is said now, not by a failed job
            except DriftLensError as exc:
                show_plain(exc)  # echoes typed input: plain text
            else:
                with page_session() as session:
                    import_sample_questions(session=session)
                # A background process: a reload, another page or a closed tab does not stop it.
                if start_job(
                    key="runs-generate",
                    kind="generate",
                    title=f"Generate and label {name!r}",
                    argv=[
                        "generate",
                        "--model",
                        model,
                        "--run",
                        name,
                        "--perturbations",
                        selection,
                        "--samples",
                        str(int(samples)),
                        "--label",
                        "keywords",
                    ],
                    scope={"run": name},
                    unit="responses",
                ):
                    st.rerun()


def _browse() -> None:
    # The reads below take seconds on a first visit or a large workspace, and the status widget
    # is hidden: each sits under a spinner that says so (after Streamlit's half-second delay).
    with st.spinner("Reading the runs…", show_time=True), page_session() as session:
        # Reasoning-drift runs first (the default); memory-conflict runs after them, marked.
        reasoning = reasoning_runs(session=session)
        runs = [
            *reasoning,
            *(r.name for r in list_runs(session=session) if r.name not in reasoning),
        ]
    if not runs:
        # a panel returns (no st.stop): a panel drawn after it still draws
        st.info("No runs yet: launch one above (Launch a run, then Generate and label).")
        return
    # ``?run=`` (and ``?question=``) open a linked view; picking another rewrites the URL.
    run = str(
        url_select(
            "Run",
            runs,
            param="run",
            format_func=lambda r: r if r in reasoning else f"{r} (memory conflicts)",
        )
    )
    with st.spinner("Reading the run…", show_time=True):
        with page_session() as session:
            revision = run_revision(run, session=session)
        overview = _overview(page_settings().db_url, run, revision)
    if overview.simulated:
        st.error("SIMULATED DATA — responses come from the built-in simulator.")
    cols = st.columns(4)
    cols[0].metric("Responses", overview.responses)
    cols[1].metric("Failed", overview.failed)
    cols[2].metric("Questions", len(overview.question_ids))
    cols[3].metric("Parsed ok", overview.by_parse_status.get("ok", 0))
    st.text(f"Model: {overview.model} · status: {overview.status}")
    st.dataframe(
        pd.DataFrame(
            sorted(overview.by_parse_status.items()), columns=["parse status", "responses"]
        ),
        hide_index=True,
    )

    if overview.question_ids:
        question_id = str(url_select("Question", overview.question_ids, param="question"))
        with (
            st.spinner("Reading the question's responses…", show_time=True),
            page_session() as session,
        ):
            question, views = question_responses(run, question_id, session=session)
        st.markdown(f"**Question:** {escape_markdown(question)}")
        conditions = sorted({v.condition for v in views if v.condition != "baseline"})
        other = (
            url_select("Compare the baseline with", conditions, param="condition")
            if conditions
            else None
        )

        def render(title: str, view_list: list[ResponseView]) -> None:
            st.markdown(f"#### {escape_markdown(title)}")
            for v in view_list:
                if v.memory_line.strip():
                    st.markdown(f"*Memory:* {escape_markdown(v.memory_line)}")
                chips = []
                for s in v.steps:
                    colour = _ROOT_COLOURS.get(s.root, "#888888")
                    chips.append(
                        f'<div style="margin:.25rem 0"><span style="background:{colour};color:#fff;'
                        f'border-radius:3px;padding:0 .35rem;font-size:.78rem">'
                        f"{inline_html(s.root)} · {inline_html(s.leaf)}</span> "
                        f"<b>{s.index + 1}.</b> {inline_html(s.text)}</div>"
                    )
                st.caption(f"sample {v.sample} · parse status {v.parse_status}")
                # Every piece of model text above went through inline_html: it stays inert.
                st.markdown("".join(chips) or "*(no parsed steps)*", unsafe_allow_html=True)
                if v.answer:
                    st.markdown(f"*Answer:* {escape_markdown(v.answer)}")

        left, right = st.columns(2)
        with left:
            render("Baseline (no memory)", [v for v in views if v.condition == "baseline"])
        with right:
            if other:
                render(other, [v for v in views if v.condition == other])

    with st.expander(f"All responses ({overview.responses:,})"):
        # One page at a time, read with LIMIT/OFFSET: the run's rows never all reach the page.
        size_col, page_col = st.columns(2)
        page_size = int(size_col.selectbox("Rows per page", (25, 50, 100), index=1))
        n_pages = max(1, -(-overview.responses // page_size))
        page_no = int(
            page_col.number_input(f"Page (of {n_pages:,})", min_value=1, max_value=n_pages, value=1)
        )
        with page_session() as session:
            page = response_page(
                run,
                session=session,
                offset=(page_no - 1) * page_size,
                limit=page_size,
                total=revision[2],
            )
        first = page.offset + 1 if page.rows else 0
        st.caption(f"Rows {first:,}–{page.offset + len(page.rows):,} of {page.total:,}")
        # st.dataframe shows cell text as text (never HTML or Markdown): model output is inert.
        st.dataframe(
            pd.DataFrame(
                [vars(r) for r in page.rows],
                columns=[
                    "question_id",
                    "condition",
                    "condition_class",
                    "sample",
                    "parse_status",
                    "answer",
                    "error",
                ],
            ),
            hide_index=True,
        )
