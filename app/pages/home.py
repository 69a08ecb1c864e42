"""Home: workspace status and the next step to take."""

from __future__ import annotations

import streamlit as st

import driftlens_core
from app.instruments import PAGES_DIR, instrument_pages
from app.ui.db import page_session, page_settings
from storage.repo.questions import benchmark_question_count
from storage.settings import redacted_url
from storage.workspace import counts_revision, table_counts

st.title("DriftLens Workbench")
st.caption("Does what an assistant remembers about a user change how it reasons?")


@st.cache_data(max_entries=16, show_spinner=False)
def _counts(db_url: str, revision: tuple[int, ...]) -> dict[str, int]:
    """Row counts of one workspace revision (``COUNT(*)`` reads whole tables).

    Questions are the benchmark's, as the Benchmark page counts them: the request rows an
    instrument stores as questions (memory banks, probes) are not questions of the benchmark.
    """
    with page_session() as session:
        counts = table_counts(session=session)
        counts["question"] = benchmark_question_count(session=session)
        return counts


settings = page_settings()
with page_session() as session:
    revision = counts_revision(session=session)
counts = _counts(settings.db_url, revision)

left, right = st.columns(2)
left.metric("Questions", counts.get("question", 0))
left.metric("Responses", counts.get("response", 0))
right.metric("Step labels", counts.get("step_label", 0))
right.metric("Analyses", counts.get("analysis", 0))
st.text(f"Workspace: {settings.workspace}")
st.text(f"Database: {redacted_url(settings.db_url)}")
st.text(f"Core implementation: {driftlens_core.implementation()}")

st.subheader("Next step")
if not counts.get("question"):
    st.info("Import questions (Benchmark page) or run `driftlens demo`.")
elif not counts.get("response"):
    st.info("Generate responses: `driftlens generate --model sim/default --run demo`.")
elif not counts.get("step_label"):
    st.info("Label the steps: `driftlens label --run demo --labeler keywords`.")
elif not counts.get("analysis"):
    st.info("Analyse drift: `driftlens analyze --run demo --labeler keywords --out report`.")
else:
    st.info(
        "Read the results on the Analysis page (or the report it links), compare responses "
        "on the Runs page, refine the ontology in the Ontology studio, or push a human study."
    )
# The links take the paths the router registered (st.navigation knows only those).
st.caption(
    "Each instrument runs its own studies; Compare pairs two or more runs of one "
    "instrument; Jobs lists the work running in the background."
)
# the Instruments section's pages (an instrument's pages placed in another section are
# reached there)
links = [(p.path, p.title, p.icon) for p in instrument_pages() if p.section is None]
links += [
    (PAGES_DIR / "compare.py", "Compare", ":material/compare_arrows:"),
    (PAGES_DIR / "jobs.py", "Jobs", ":material/pending_actions:"),
]
for column, (path, title, icon) in zip(st.columns(len(links)), links, strict=True):
    column.page_link(str(path), label=title, icon=icon)
