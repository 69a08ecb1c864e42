"""Ontology: versions, definitions, side-by-side diff, edit as a new version."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui.db import page_session
from app.ui.drafts import clear_draft, draft_chips, draft_text_area, has_draft, leave_guard
from app.ui.safe import escape_markdown, show_plain
from app.ui.word_diff import diff_html
from ontology.diff import diff_documents, render_diff
from ontology.schema import dump_ontology, parse_ontology
from ontology.versions import (
    document,
    edit_leaf,
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

# A save selects the version it made (set before the selectbox exists in this run).
saved = st.session_state.pop("versions_select", None)
if saved is not None and saved in options.values():
    st.session_state["version"] = next(k for k, v in options.items() if v == saved)
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
    show_plain(flash, kind="success")
a_col, n_col = st.columns(2)
author_in = a_col.text_input(
    "Author", key="author", help="Recorded on the new version (who made this edit)."
)
note_in = n_col.text_input("Note (why)", key="note", help="Recorded on the new version.")


def _saved(label: str, new_id: int, same: bool, what: str) -> None:
    """Show the outcome of a save: nothing new, or select the new version."""
    if same:
        st.info("Nothing changed; this version already holds this content.")
        return
    by = f" by {author_in.strip()}" if author_in.strip() else ""
    st.session_state["versions_flash"] = f"Saved {label} ({what}){by}."
    st.session_state["versions_select"] = new_id
    st.rerun()


st.markdown("**One leaf**")
leaf_names = [leaf.name for root in doc.roots for leaf in root.leaves]
leaf_name = st.selectbox(
    "Leaf",
    leaf_names,
    format_func=lambda name: f"{doc.symbol_of[name]} · {name}",
    key=f"leaf-{vid}",
)
current = doc.leaf(leaf_name)
leaf_obj = f"version-{vid}-leaf-{doc.symbol_of[leaf_name]}"
definition_in = draft_text_area(
    "Definition",
    current.definition,
    page="ontology",
    obj=leaf_obj,
    field="definition",
    height=120,
)
t_col, x_col = st.columns(2)
# Chips: every term is one chip; typing a new term and pressing Enter adds it.
with t_col:
    triggers_in = draft_chips(
        "Triggers",
        list(current.triggers),
        page="ontology",
        obj=leaf_obj,
        field="triggers",
        help="Words that point to this leaf (the keyword labeler matches them). Type to add one.",
    )
with x_col:
    exclusions_in = draft_chips(
        "Exclusions",
        list(current.exclusions),
        page="ontology",
        obj=leaf_obj,
        field="exclusions",
        help="What does not belong under this leaf even when it sounds close. Type to add one.",
    )
if st.button("Save leaf as new version", key="save-leaf"):
    try:
        with page_session() as session:
            base = get_version(vid, session=session)
            stored = edit_leaf(
                base,
                leaf_name,
                definition=definition_in,
                triggers=triggers_in,
                exclusions=exclusions_in,
                session=session,
                author=author_in,
                note=note_in,
            )
            label, new_id, same = version_label(stored), stored.id or 0, stored.id == vid
    except DriftLensError as exc:
        show_plain(exc)
    else:
        if not same:
            clear_draft("ontology", leaf_obj, ("definition", "triggers", "exclusions"))
        _saved(label, new_id, same, f"leaf {leaf_name}")

st.markdown("**The whole document (YAML)**")
obj = f"version-{vid}"
text = draft_text_area(
    "YAML", dump_ontology(doc), page="ontology", obj=obj, field="yaml", height=400
)
leave_guard(["YAML", "Definition"])
if has_draft("ontology", obj) or has_draft("ontology", leaf_obj):
    st.caption("Your edits are kept as a draft until you save them as a new version.")
if st.button("Save as new version"):
    try:
        edited = parse_ontology(text, source="the editor")
        with page_session() as session:
            base = get_version(vid, session=session)
            stored = new_version(
                base,
                edited,
                session=session,
                author=author_in.strip() or None,
                note=note_in.strip() or None,
            )
            label, new_id, same = version_label(stored), stored.id or 0, stored.id == vid
    except DriftLensError as exc:
        show_plain(exc)
    else:
        if not same:
            clear_draft("ontology", obj, ("yaml",))
        _saved(label, new_id, same, "YAML")
