"""Ontology: versions, definitions, side-by-side diff, edit as a new version."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui.db import page_session
from app.ui.drafts import clear_draft, draft_chips, draft_text_area, has_draft, leave_guard
from app.ui.safe import show_plain
from app.ui.url_state import url_open, url_select
from app.ui.word_diff import show_word_diff
from ontology.diff import diff_documents, render_diff
from ontology.lineage import branch_of, main_head, rebase_edit
from ontology.schema import OntologyDoc, dump_ontology, parse_ontology
from ontology.versions import (
    document,
    get_version,
    list_versions,
    new_version,
    seed_ontologies,
    version_label,
    with_leaf_fields,
)
from storage.errors import DriftLensError


def _run_under_two_versions(version_a: str, version_b: str) -> None:
    """One run's labels by one labeler under two versions: leaf flow, κ, flipped conclusions."""
    from study.compare.report import SIMULATED_NOTE
    from study.reasoning.compare import ADAPTER as REASONING
    from study.reasoning.version_compare import compare_versions

    if version_a == version_b:
        st.info("Pick two different versions above (Old and New).")
        return
    with page_session() as session:
        left, right = st.columns(2)
        run = url_select("Run", REASONING.list_runs(session=session), param="vrun", what="run",
                         widget=left.selectbox)  # fmt: skip
        labeler = url_select("Labeler", REASONING.labelers(session=session) or [],
                             param="labeler", widget=right.selectbox)  # fmt: skip
        if run is None or labeler is None:
            st.info("Pick a run labelled under both versions.")
            return
        try:
            with st.spinner("Comparing the versions on the run…"):
                vc = compare_versions(run, version_a, version_b, labeler=labeler,
                                      session=session, n_boot=1000)  # fmt: skip
        except DriftLensError as exc:
            show_plain(exc)
            return
    if vc.simulated:
        st.error(SIMULATED_NOTE)
    st.metric("Steps whose leaf changed", f"{vc.changed} of {vc.shared_steps}",
              help="Steps labeled under both versions.")  # fmt: skip
    st.caption(
        f"Identical labels {vc.identical_share:.1%}, Cohen's κ between the versions "
        f"{vc.kappa:.3f}; {vc.only_a} step(s) labeled only under Old, {vc.only_b} only under New."
    )
    st.markdown("**Per-leaf flow**")
    st.dataframe(
        [{"leaf (Old)": f.leaf_a, "steps": f.steps, "kept": f.kept,
          "went to (New)": ", ".join(f"{leaf} {n}" for leaf, n in f.to if leaf != f.leaf_a)}
         for f in vc.flows],
        hide_index=True,
    )  # fmt: skip
    st.markdown("**Drift conclusions that flipped**")
    if vc.flips:
        st.dataframe([f.__dict__ for f in vc.flips], hide_index=True)
    else:
        st.success("No drift conclusion flipped between the versions.")
    st.markdown("**Paired d_rel (New − Old) on the same questions**")
    st.dataframe([r.to_dict() for r in vc.paired], hide_index=True)


st.title("Ontology")
st.caption(
    "Value ontology versions (SPEC §5). Versions are immutable: an edit is saved as a new "
    "version whose parent is the one you edited."
)

# The first visit parses the bundled ontologies (a second or more on 2 cores), with the
# status widget hidden: a spinner after half a second says so.
with st.spinner("Reading the ontology versions…", show_time=True), page_session() as session:
    seed_ontologies(session=session)
    versions = list_versions(session=session)
    # The operational ontology first, newest version first: what a researcher edits next.
    ordered = sorted(versions, key=lambda v: (v.name != "driftlens", v.name, -v.version))
    labels = {v.id: version_label(v) for v in versions}
    of_name = {v.name: [w for w in versions if w.name == v.name] for v in versions}
    branches = {v.id: branch_of(v, of_name[v.name]) for v in versions}
    heads = {name: main_head(rows) for name, rows in of_name.items()}
    shown_as = {
        v.id: f"{labels[v.id]} (id {v.id}{', ' + branch if (branch := branches[v.id]) else ''})"
        for v in ordered
    }
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

ids: list[int] = [v.id for v in ordered if v.id is not None]
# ``?version=driftlens@3`` opens a version; a save opens the version it made (url_open).
picked: int | None = url_select(
    "Version",
    ids,
    param="version",
    format_func=lambda i: shown_as[i],
    to_param=labels.__getitem__,
    key="version",
)
vid = picked if picked is not None else ids[0]
doc = docs[vid]
selected = next(v for v in versions if v.id == vid)
head = heads[selected.name]
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
old_id = url_select(
    "Old",
    ids,
    param="old",
    default=ids[min(1, len(ids) - 1)],
    format_func=lambda i: shown_as[i],
    to_param=labels.__getitem__,
    widget=left.selectbox,
)
new_id = url_select(
    "New",
    ids,
    param="new",
    format_func=lambda i: shown_as[i],
    to_param=labels.__getitem__,
    widget=right.selectbox,
)
old_id, new_id = old_id or ids[0], new_id or ids[0]
old_doc, new_doc = docs[old_id], docs[new_id]
diff = diff_documents(old_doc, new_doc, old_label=shown_as[old_id], new_label=shown_as[new_id])
if diff.empty:
    st.info("The two versions have the same content.")
else:
    # One table of what changed up front; the word-by-word boxes (two per changed field:
    # hundreds of elements between two unrelated ontologies, most of the page's drawing
    # time) and the text diff are built only while their expander is open (issue #20).
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "root": change.root,
                    "node": change.name,
                    "change": change.status,
                    "fields": ", ".join(f.field for f in change.fields),
                }
                for change in diff.changes
            ]
        ),
        hide_index=True,
        width="stretch",
    )
    with st.expander("Side by side, word by word", key="diff-words", on_change="rerun") as words:
        if words.open:
            show_word_diff(diff)
    with st.expander("Diff as text", key="diff-text", on_change="rerun") as as_text:
        if as_text.open:
            st.code(render_diff(diff), language=None)

# What the change did to a run: the run's labels and drift under Old and under New
# (study.reasoning.version_compare; `driftlens ontology compare-run` in the terminal). Built
# only while open; a link with ?vrun= opens it.
with st.expander(
    "What the change did to a run (its labels and drift under Old and New)",
    expanded="vrun" in st.query_params, key="on-a-run", on_change="rerun",
) as on_a_run:  # fmt: skip
    if on_a_run.open:
        _run_under_two_versions(labels[old_id], labels[new_id])

st.subheader("Edit as a new version")
flash = st.session_state.pop("versions_flash", None)
if flash is not None:
    show_plain(flash, kind="success")
a_col, n_col = st.columns(2)
author_in = a_col.text_input(
    "Author", key="author", help="Recorded on the new version (who made this edit)."
)
note_in = n_col.text_input("Note (why)", key="note", help="Recorded on the new version.")


# Saving from a version that is not the newest of the main line would branch from it and
# revert what came after (accepted rewrites): the researcher chooses, nothing is the default.
REBASE, BRANCH = "rebase", "branch"
how: str | None = None
head_label = labels[head.id] if head is not None else ""
if head is not None and head.id != vid:
    newer = diff_documents(doc, docs[head.id or 0])
    st.warning(
        f"{labels[vid]} is not the newest version of {selected.name}: "
        f"{labels[head.id or 0]} is, and changes {len(newer.changes)} node(s) this one lacks. "
        "Saving an edit of this version must say how."
    )
    how = st.radio(
        "Save the edit how",
        [REBASE, BRANCH],
        index=None,
        format_func=lambda h: (
            f"Rebase: apply my edit on top of {head_label} (keeps its changes)"
            if h == REBASE
            else f"Branch from {labels[vid]} on purpose (the new version leaves out "
            f"{head_label}'s changes; rounds keep defaulting to the main line)"
        ),
        key=f"save-how-{vid}",
    )
undecided = head is not None and head.id != vid and how is None
save_help = "Choose above how to save an edit of an older version." if undecided else None


def _store(edited: OntologyDoc) -> tuple[str, int, bool, str]:
    """Store ``edited`` (made on the selected version) as chosen; (label, id, same, note)."""
    with page_session() as session:
        base = get_version(vid, session=session)
        extra = ""
        if how == REBASE and head is not None:
            edited = rebase_edit(doc, edited, docs[head.id or 0])
            base = get_version(head.id, session=session)
            extra = f", rebased on {labels[head.id or 0]}"
        elif how == BRANCH and head is not None:
            extra = (
                f", a branch of {labels[vid]}: rounds, labels and analyses keep defaulting to "
                f"{labels[head.id or 0]}; name it to use it"
            )
        stored = new_version(
            base,
            edited,
            session=session,
            author=author_in.strip() or None,
            note=note_in.strip() or None,
        )
        return version_label(stored), stored.id or 0, stored.id == base.id, extra


def _saved(label: str, new_id: int, same: bool, what: str) -> None:
    """Show the outcome of a save: nothing new, or select the new version."""
    if same:
        st.info("Nothing changed; this version already holds this content.")
        return
    by = f" by {author_in.strip()}" if author_in.strip() else ""
    st.session_state["versions_flash"] = f"Saved {label} ({what}){by}."
    url_open("version", label)
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
# Chips: every term is one chip; typing a new term and pressing Enter adds it.
_CHIPS = (
    ("Triggers", "triggers", "Words that point to this leaf (the keyword labeler matches them)."),
    ("Exclusions", "exclusions", "What does not belong under this leaf even when it sounds close."),
)
chips_in: list[list[str]] = []
for column, (label, field, meaning) in zip(st.columns(2), _CHIPS, strict=True):
    with column:
        chips_in.append(
            draft_chips(
                label,
                list(getattr(current, field)),
                page="ontology",
                obj=leaf_obj,
                field=field,
                help=f"{meaning} Type to add one.",
            )
        )
triggers_in, exclusions_in = chips_in
if st.button("Save leaf as new version", key="save-leaf", disabled=undecided, help=save_help):
    try:
        edited_leaf = with_leaf_fields(
            doc,
            leaf_name,
            definition=definition_in,
            triggers=triggers_in,
            exclusions=exclusions_in,
        )
        label, new_id, same, extra = _store(edited_leaf)
    except DriftLensError as exc:
        show_plain(exc)
    else:
        if not same:
            clear_draft("ontology", leaf_obj, ("definition", "triggers", "exclusions"))
        _saved(label, new_id, same, f"leaf {leaf_name}{extra}")

obj = f"version-{vid}"
yaml_draft = has_draft("ontology", obj)
# The document is some 12,000 characters: its editor is built only while the expander is
# open (issue #20: the page's first render). A YAML draft opens it, so unsaved edits are
# never out of sight.
with st.expander(
    "The whole document (YAML)", expanded=yaml_draft, key="whole-yaml", on_change="rerun"
) as whole:
    if whole.open:
        text = draft_text_area(
            "YAML", dump_ontology(doc), page="ontology", obj=obj, field="yaml", height=400
        )
        if st.button("Save as new version", disabled=undecided, help=save_help):
            try:
                label, new_id, same, extra = _store(parse_ontology(text, source="the editor"))
            except DriftLensError as exc:
                show_plain(exc)
            else:
                if not same:
                    clear_draft("ontology", obj, ("yaml",))
                _saved(label, new_id, same, f"YAML{extra}")
leave_guard(["YAML", "Definition"])
if yaml_draft or has_draft("ontology", leaf_obj):
    st.caption("Your edits are kept as a draft until you save them as a new version.")
