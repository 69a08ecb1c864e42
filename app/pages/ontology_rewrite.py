"""Rewrite: propose a rewrite of two confused definitions; review, edit, accept or reject."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui.db import page_session, page_settings
from app.ui.drafts import clear_draft, draft_text_area, has_draft, leave_guard
from app.ui.page_stop import stop_with_info
from app.ui.safe import escape_markdown, show_plain
from app.ui.url_state import url_open, url_select
from app.ui.word_diff import diff_html
from llm.specs import ModelSpec
from ontology.prompts import definition_block
from ontology.refinement_impact import gate_summary
from ontology.refinement_loop import note_human_accept
from ontology.rewrite import (
    accept_conflict,
    accept_proposal,
    base_version,
    list_proposals,
    newest_version,
    propose_rewrite,
    reject_proposal,
    require_proposal,
)
from ontology.rounds import round_agreement, round_history
from ontology.schema import UNMAPPED, OntologyDoc
from ontology.versions import document, get_version, version_label
from ontology.working_round import experiment_rounds, working_round
from storage.errors import DriftLensError
from storage.workspace import counts_revision

PAGE = "rewrite"


def _current(doc: OntologyDoc, leaf: str, fallback: str) -> str:
    """The leaf's definition block in ``doc`` (``fallback`` when the leaf is gone)."""
    return definition_block(doc.leaf(leaf)) if leaf in doc.leaf_names else fallback


st.title("Definition rewrite")
st.caption(
    "Ask a model to make the two most-confused definitions mutually exclusive (SPEC §5), "
    "then review the change. Accepting creates a new ontology version on top of the newest "
    "one."
)

# A message from the action of the previous run (the page reruns after a decision so
# every widget shows the new state).
flash = st.session_state.pop("rewrite_flash", None)
if flash is not None:
    show_plain(flash, kind="success")

with page_session() as session:
    history = round_history(session=session)

if history:
    st.subheader("Propose a rewrite")
    numbers = [h.round for h in history]
    versions = {h.round: h.ontology_version for h in history}
    # Not in a form: the pair list below must follow the round chosen here.
    # Open on the loop's newest finished round (``?round=N`` opens another): a running or
    # interrupted one has partial agreement, and a validation experiment's round (cross,
    # on the original-style ontology) is not one whose confused pairs are to be rewritten.
    default_round = working_round(
        history, exclude=experiment_rounds(workspace=page_settings().workspace)
    )
    number: int = url_select(  # type: ignore[assignment]  # never None: rounds exist
        "Round",
        numbers,
        param="round",
        default=default_round,
        key="round",
        format_func=lambda n: f"round {n} ({versions[n]})",
    )
    with page_session() as session:
        confused = [
            p
            for p in round_agreement(int(number), session=session).most_confused
            if UNMAPPED not in (p.leaf_a, p.leaf_b)
        ]
    if not confused:
        st.info(f"The labelers of round {number} never split a step between two leaves.")
    else:
        pair_labels = [f"{p.leaf_a} | {p.leaf_b} ({p.count} steps)" for p in confused]
        pair = st.selectbox(
            "Leaf pair (most confused first)", pair_labels, index=0, key=f"pair-{number}"
        )
        model = st.text_input("Model", "sim/default", key="model")
        if st.button("Propose rewrite"):
            picked = confused[pair_labels.index(pair)]
            try:
                with st.spinner(f"Asking {model} for a rewrite…"), page_session() as session:
                    proposal = propose_rewrite(
                        int(number),
                        model=ModelSpec.parse(model),
                        session=session,
                        pair=(picked.leaf_a, picked.leaf_b),
                    )
                    pid, status = proposal.id, proposal.status
                    leaf_a, leaf_b = proposal.leaf_a, proposal.leaf_b
            except DriftLensError as exc:
                show_plain(exc)
            else:
                url_open("proposal", pid)
                st.session_state["rewrite_flash"] = (
                    f"Proposal {pid} stored ({status}): {leaf_a} vs {leaf_b}, round {number}."
                )
                st.rerun()
else:
    st.info("Run a labeling round first (the Rounds page, Run round).")

with page_session() as session:
    proposals = list_proposals(session=session)
if not proposals:
    stop_with_info("No proposals yet.")

st.subheader("Proposals")
st.dataframe(
    pd.DataFrame(
        [
            {
                "proposal": x.id,
                "base version": x.base_version,
                "round": x.round,
                "pair": f"{x.leaf_a} vs {x.leaf_b}",
                "created": x.created_at,
                "status": x.status,
                "new version": x.resulting_version or "",
            }
            for x in proposals
        ]
    ),
    hide_index=True,
    width="stretch",
)

st.subheader("Review")
labels = {
    f"#{x.id} {x.leaf_a} vs {x.leaf_b} (round {x.round}, {x.status})": x.id for x in proposals
}
names = {pid: name for name, pid in labels.items()}
# ``?proposal=ID`` opens one; a new proposal opens itself.
shown_pid: int | None = url_select(
    "Proposal", list(names), param="proposal", format_func=names.__getitem__
)
pid = shown_pid if shown_pid is not None else next(iter(names))
with page_session() as session:
    row = require_proposal(pid, session=session)
    base = base_version(row, session=session)
    newest = newest_version(base.name, session=session)
    newest_doc = document(newest)
    view = {
        "leaf_a": row.leaf_a,
        "leaf_b": row.leaf_b,
        "a_old": row.def_a_old,
        "b_old": row.def_b_old,
        # "current" is the newest version's text (what accepting replaces), not the base's.
        "a_cur": _current(newest_doc, row.leaf_a, row.def_a_old),
        "b_cur": _current(newest_doc, row.leaf_b, row.def_b_old),
        "a_new": row.def_a_new or "",
        "b_new": row.def_b_new or "",
        "status": row.status,
        "model": row.model,
        "evidence": list(row.evidence),
        "raw": row.raw_output or "",
        "error": row.request.get("error", ""),
        "base": version_label(base),
        "newest": version_label(newest),
        "conflict": (
            accept_conflict(row, session=session)
            if row.status in ("pending", "unparseable")
            else None
        ),
        "result": (
            version_label(get_version(row.resulting_version_id, session=session))
            if row.resulting_version_id
            else None
        ),
    }

st.text(
    f"Status: {view['status']}   Model: {view['model']}   Base version: {view['base']}   "
    f"Newest version: {view['newest']}"
)
if view["result"]:
    st.text(f"Accepted as {view['result']}")
if view["error"]:
    show_plain(f"The model's reply could not be parsed: {view['error']}", kind="warning")
for side, leaf, old, new in (
    ("1", view["leaf_a"], view["a_cur"], view["a_new"]),
    ("2", view["leaf_b"], view["b_cur"], view["b_new"]),
):
    st.markdown(f"**Definition {side}: {escape_markdown(leaf)}**")
    left, right = st.columns(2)
    left.caption(f"current ({view['newest']})")
    left.markdown(diff_html(old, new, side="old"), unsafe_allow_html=True)
    right.caption("proposed")
    right.markdown(diff_html(old, new, side="new"), unsafe_allow_html=True)


@st.cache_data(max_entries=32, show_spinner="Estimating what an accept would change…")
def _gate_view(db_url: str, proposal: int, revision: tuple[int, ...]) -> list[str] | None:
    """The gate's numbers and the impact preview of one workspace revision (the tier
    estimate rebuilds each analysis's drift table per draw: seconds, so not per rerun)."""
    with page_session() as session:
        return gate_summary(proposal, session=session)


with page_session() as session:
    gate_revision = counts_revision(session=session)
gate_view = _gate_view(page_settings().db_url, pid, gate_revision)
if gate_view is not None:
    st.subheader("Refinement gate (held-out steps)")
    for line in gate_view:
        st.text(line)

st.subheader("Evidence: steps the labelers split between the two leaves")
if view["evidence"]:
    st.dataframe(
        pd.DataFrame([{"step": e["text"], **e.get("labels", {})} for e in view["evidence"]]),
        hide_index=True,
        width="stretch",
    )
with st.expander("Raw model output"):
    st.code(view["raw"], language=None)

if view["status"] in ("pending", "unparseable"):
    st.subheader("Decide")
    obj = f"proposal-{pid}"
    label_a = f"Definition 1 ({view['leaf_a']})"
    label_b = f"Definition 2 ({view['leaf_b']})"
    edit_a = draft_text_area(label_a, view["a_new"], page=PAGE, obj=obj, field="def_a")
    edit_b = draft_text_area(label_b, view["b_new"], page=PAGE, obj=obj, field="def_b")
    leave_guard([label_a, label_b])
    if has_draft(PAGE, obj):
        st.caption("Your edits are kept as a draft until you accept or reject the proposal.")
    if view["conflict"]:
        show_plain(view["conflict"], kind="warning")
    elif view["newest"] != view["base"]:
        show_plain(
            f"Written against {view['base']}; accepting applies these two definitions "
            f"on top of {view['newest']} (its other changes are kept).",
            kind="info",
        )
    gate_reason = None
    if gate_view is not None and any("verdict: rejected" in line for line in gate_view):
        gate_reason = st.text_input("Why accept what the gate rejected (stored)", key="gate-why")
    c1, c2 = st.columns(2)
    accept_help = "Blocked by the conflict above." if view["conflict"] else None
    if c1.button(
        "Accept (with edits)", key="accept", disabled=bool(view["conflict"]), help=accept_help
    ):
        try:
            with page_session() as session:
                note_human_accept(pid, gate_reason, session=session)
                version = accept_proposal(pid, session=session, def_a=edit_a, def_b=edit_b)
                label = version_label(version)
        except DriftLensError as exc:
            show_plain(exc)
        else:
            clear_draft(PAGE, obj, ("def_a", "def_b"))
            st.session_state["rewrite_flash"] = (
                f"Accepted proposal {pid}: new version {label} (parent {view['newest']})."
            )
            st.rerun()
    if c2.button("Reject", key="reject"):
        try:
            with page_session() as session:
                reject_proposal(pid, session=session)
        except DriftLensError as exc:
            show_plain(exc)
        else:
            clear_draft(PAGE, obj, ("def_a", "def_b"))
            st.session_state["rewrite_flash"] = f"Rejected proposal {pid}."
            st.rerun()
