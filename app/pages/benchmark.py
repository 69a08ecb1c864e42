"""Benchmark: import questions, see their curation state (filter, tiers)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from app.ui.db import page_session
from app.ui.progress import progress_bar
from app.ui.safe import show_plain
from llm.specs import ModelSpec
from storage.errors import DriftLensError
from study.questions import import_questions, import_sample_questions, list_questions

st.title("Benchmark")
st.caption(
    "Open-ended, persona-indifferent questions (SPEC §2). Import candidates, then filter "
    "them with an LLM and verify them with annotators (Human studies)."
)

with st.expander("Import questions", expanded=False):
    upload = st.file_uploader(
        "CSV (question/text, optional id) or JSONL (text, optional id)",
        type=["csv", "tsv", "jsonl"],
    )
    col_a, col_b = st.columns(2)
    if col_a.button("Import file", disabled=upload is None) and upload is not None:
        suffix = Path(upload.name).suffix or ".csv"
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"upload{suffix}"
            path.write_bytes(upload.getvalue())
            try:
                with page_session() as session:
                    report = import_questions(path, session=session, source=upload.name)
            except DriftLensError as exc:
                show_plain(exc)
            else:
                st.success(
                    f"Added {len(report.added)} questions; "
                    f"{len(report.duplicates)} duplicates skipped."
                )
    if col_b.button("Import the bundled sample questions"):
        with page_session() as session:
            report = import_sample_questions(session=session)
        st.success(
            f"Added {len(report.added)} questions; {len(report.duplicates)} were already there."
        )

with st.expander("Run the LLM filter", expanded=False):
    # SPEC §2: one request per question; verdicts of the same model are kept unless redo.
    filter_model = st.text_input("Filter model (provider/model)", value="sim/default")
    redo = st.checkbox("Ask again about questions this model already screened", value=False)
    if st.button("Run the filter"):
        from study.reasoning.question_filter import filter_questions

        show_filter = progress_bar("filtering")

        try:
            with page_session() as session:
                fs = filter_questions(
                    ModelSpec.parse(filter_model), session=session, progress=show_filter, redo=redo
                )
        except DriftLensError as exc:
            show_plain(exc)
        else:
            st.success(
                f"Filtered {fs.requested} question(s) with {fs.model}: {fs.accepted} accepted, "
                f"{fs.rejected} rejected, {fs.errors} unparseable after a repair request, "
                f"{fs.failed} failed; {fs.skipped} already screened."
            )

with st.expander("Export the benchmark", expanded=False):
    export_tier = st.selectbox("Tier", ["core", "relaxed", "all"], index=0)
    if st.button("Prepare the export"):
        import io
        import zipfile

        from study.reasoning.benchmark_export import export_benchmark

        with tempfile.TemporaryDirectory() as tmp:
            try:
                with page_session() as session:
                    result = export_benchmark(Path(tmp), session=session, tier=export_tier)
            except DriftLensError as exc:
                show_plain(exc)
            else:
                buffer = io.BytesIO()
                with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
                    for path in result.files:
                        zf.write(path, arcname=path.name)
                st.success(f"{result.questions} question(s) ready ({export_tier}).")
                st.download_button(
                    "Download benchmark (JSONL, Parquet, datasheet)",
                    data=buffer.getvalue(),
                    file_name=f"driftlens-benchmark-{export_tier}.zip",
                    mime="application/zip",
                    on_click="ignore",  # a download needs no rerun of the page
                )

with page_session() as session:
    questions = list_questions(session=session)
    frame = pd.DataFrame(
        [
            {
                "id": q.external_id,
                "question": q.text,
                "domains": ", ".join(q.domains or []),
                "filter": q.filter_label or ("ERROR" if q.filter_error else ""),
                "reason": q.filter_reason or q.filter_error or "",
                "tier": q.tier or "",
            }
            for q in questions
        ],
        columns=["id", "question", "domains", "filter", "tier", "reason"],
    )

left, mid, right = st.columns(3)
left.metric("Questions", len(frame))
mid.metric("Accepted by the filter", int((frame["filter"] == "ACCEPT").sum()))
right.metric(
    "Core / relaxed",
    f"{int((frame['tier'] == 'core').sum())} / "
    f"{int(frame['tier'].isin(['core', 'relaxed']).sum())}",
)
# Dataframes show cell text literally: untrusted question text stays text.
st.dataframe(frame, width="stretch", hide_index=True)
