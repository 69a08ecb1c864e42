"""Perturbations: browse the memory-line catalog and save edits as a new version."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui.db import page_session
from app.ui.url_state import url_multiselect, url_select
from study.catalog.document import CatalogEntry, document_from_entries
from study.catalog.store import (
    catalog_perturbations,
    ensure_default_catalog,
    import_catalog,
    list_catalogs,
)

st.title("Perturbations")
st.caption(
    "Memory lines prepended to questions (SPEC §3): pragmatic noise (negative control), "
    "user attributes (the experimental condition), major life events (positive control). "
    "Versions are immutable: saving edits creates a new version."
)

# The first visit stores the bundled catalog (seconds on 2 cores) and the status widget is
# hidden: the spinners say "working" (after Streamlit's half-second delay) instead of a
# page that stands still under its heading.
with st.spinner("Reading the catalogs…", show_time=True), page_session() as session:
    ensure_default_catalog(session=session)
    catalogs = list_catalogs(session=session)
labels = {f"{c.name} v{c.version}": c for c in catalogs}
# ``?catalog=name vN`` opens a version; else the newest.
choice = url_select("Catalog version", list(labels), param="catalog", default=list(labels)[-1])
catalog = labels[str(choice)]
assert catalog.id is not None
with st.spinner("Reading the memory lines…", show_time=True), page_session() as session:
    rows = catalog_perturbations(catalog.id, session=session)
    frame = pd.DataFrame(
        [
            {"key": p.key, "class": p.condition_class, "category": p.category, "text": p.text}
            for p in rows
        ],
        columns=["key", "class", "category", "text"],
    )
    catalog_name = catalog.name

classes = url_multiselect(
    "Classes",
    sorted(frame["class"].unique()),
    param="class",
    default=sorted(frame["class"].unique()),
)
shown = frame[frame["class"].isin(classes)]
counts = shown.groupby(["class", "category"]).size().rename("stimuli").reset_index()
st.dataframe(counts, hide_index=True, width="stretch")

edited = st.data_editor(
    shown,
    hide_index=True,
    width="stretch",
    disabled=["key", "class", "category"],
    key="catalog_editor",
)
if st.button("Save edits as a new version"):
    merged = frame.set_index("key")
    merged.loc[edited["key"], "text"] = edited["text"].to_numpy()
    entries = [
        CatalogEntry(
            key=str(k),
            condition_class=str(r["class"]),
            category=str(r["category"]),
            text=str(r["text"]),
        )
        for k, r in merged.iterrows()
    ]
    doc = document_from_entries(entries, name=catalog_name, note="edited in the workbench")
    with page_session() as session:
        result = import_catalog(doc, session=session)
    if result.created:
        st.success(f"Saved {result.name} v{result.version} ({result.perturbations} lines).")
    else:
        st.info("Nothing changed; the current version already holds this content.")
