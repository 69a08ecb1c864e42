"""Ontology: versions, definitions, side-by-side diff, edit as a new version."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui.db import page_session
from app.ui.drafts import clear_draft, draft_text_area, has_draft, leave_guard
from app.ui.safe import escape_markdown
from app.ui.word_diff import diff_html
from ontology.diff import diff_documents, render_diff
from ontology.schema import dump_ontology, parse_ontology
from ontology.versions import (
    document,
    get_version,
    list_versions,
    new_version,
    seed_ontologies,
    version_label,
)
from storage.errors import DriftLensError

st.title("Ontology")
st.caption(
    "Value ontology versions (SPEC §5). Versions are immutable: an edit is saved as a new "
    "version whose parent is the one you edited."
)

with page_session() as session:
    seed_ontologies(session=session)
    versions = list_versions(session=session)
    # The operational ontology first, newest version first: what a researcher edits next.
    ordered = sorted(versions, key=lambda v: (v.name != "driftlens", v.name, -v.version))
    options = {f"{version_label(v)} (id {v.id})": v.id for v in ordered}
    labels = {v.id: version_label(v) for v in versions}
    info = {
        v.id: (
            v.author or "",
            v.note or "",
            v.created_at.isoformat(timespec="seconds"),
            labels.get(v.parent_id) if v.parent_id is not None else None,
        )
        for v in versions
    }
    docs = {v.id: document(v) for v in versions}

choice = st.selectbox("Version", list(options), key="version")
vid = options[choice]
doc = docs[vid]
author, note, created, parent = info[vid]
st.text(f"Author: {author or '-'}   Created: {created}   Parent: {parent or '-'}")
if note:
    st.text(f"Note: {note}")

rows = [
    {
        "symbol": doc.symbol_of[leaf.name],
        "root": root.name,
        "leaf": leaf.name,
        "definition": leaf.definition,
        "triggers": ", ".join(leaf.triggers),
        "exclusions": ", ".join(leaf.exclusions),
        "examples": " | ".join(leaf.examples),
    }
    for root in doc.roots
    for leaf in root.leaves
]
st.subheader("Definitions")
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")

st.subheader("Compare two versions")
left, right = st.columns(2)
old_choice = left.selectbox("Old", list(options), index=min(1, len(options) - 1), key="old")
new_choice = right.selectbox("New", list(options), index=0, key="new")
old_doc, new_doc = docs[options[old_choice]], docs[options[new_choice]]
diff = diff_documents(old_doc, new_doc, old_label=old_choice, new_label=new_choice)
if diff.empty:
    st.info("The two versions have the same content.")
else:
    for change in diff.changes:
        st.markdown(
            f"**{escape_markdown(change.root)} / {escape_markdown(change.name)}** — {change.status}"
        )
        for f in change.fields:
            a, b = st.columns(2)
            old_text = f.old if isinstance(f.old, str) else ", ".join(f.old)
            new_text = f.new if isinstance(f.new, str) else ", ".join(f.new)
            a.caption(f"{f.field} (old)")
            a.markdown(diff_html(old_text, new_text, side="old"), unsafe_allow_html=True)
            b.caption(f"{f.field} (new)")
            b.markdown(diff_html(old_text, new_text, side="new"), unsafe_allow_html=True)
    with st.expander("Diff as text"):
        st.code(render_diff(diff), language=None)

st.subheader("Edit as a new version")
flash = st.session_state.pop("versions_flash", None)
if flash is not None:
    st.success(escape_markdown(flash))
obj = f"version-{vid}"
text = draft_text_area(
    "YAML", dump_ontology(doc), page="ontology", obj=obj, field="yaml", height=400
)
leave_guard(["YAML"])
if has_draft("ontology", obj):
    st.caption("Your edits are kept as a draft until you save them as a new version.")
author_in = st.text_input("Author", key="author")
note_in = st.text_input("Note (why)", key="note")
if st.button("Save as new version"):
    try:
        edited = parse_ontology(text, source="the editor")
        with page_session() as session:
            base = get_version(vid, session=session)
            stored = new_version(
                base, edited, session=session, author=author_in or None, note=note_in or None
            )
            label, same = version_label(stored), stored.id == vid
    except DriftLensError as exc:
        st.error(escape_markdown(str(exc)))
    else:
        if same:
            st.info("Nothing changed; this version already holds this content.")
        else:
            clear_draft("ontology", obj, ("yaml",))
            st.session_state["versions_flash"] = f"Saved {label}."
            st.rerun()
