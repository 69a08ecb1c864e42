"""Rewrite: propose a rewrite of two confused definitions; review, edit, accept or reject."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui.db import page_session
from app.ui.safe import escape_markdown
from app.ui.word_diff import diff_html
from ontology.rewrite import (
    accept_proposal,
    list_proposals,
    propose_rewrite,
    reject_proposal,
    require_proposal,
)
from ontology.rounds import round_agreement, round_history
from ontology.schema import UNMAPPED
from ontology.versions import get_version, version_label
from storage.errors import DriftLensError

st.title("Definition rewrite")
st.caption(
    "Ask a model to make the two most-confused definitions mutually exclusive (SPEC §5), "
    "then review the change. Accepting creates a new ontology version."
)

with page_session() as session:
    history = round_history(session=session)

if history:
    with st.form("propose"):
        st.subheader("Propose a rewrite")
        numbers = [h.round for h in history]
        number = st.selectbox("Round", numbers, index=len(numbers) - 1, key="round")
        with page_session() as session:
            confused = [
                p
                for p in round_agreement(int(number), session=session).most_confused
                if UNMAPPED not in (p.leaf_a, p.leaf_b)
            ]
        pair_labels = ["most confused"] + [f"{p.leaf_a} | {p.leaf_b} ({p.count})" for p in confused]
        pair = st.selectbox("Leaf pair", pair_labels, key="pair")
        model = st.text_input("Model", "sim/default", key="model")
        go = st.form_submit_button("Propose rewrite")
    if go:
        chosen = None
        if pair != "most confused":
            picked = confused[pair_labels.index(pair) - 1]
            chosen = (picked.leaf_a, picked.leaf_b)
        try:
            with page_session() as session:
                proposal = propose_rewrite(int(number), model=model, session=session, pair=chosen)
                pid, status = proposal.id, proposal.status
        except DriftLensError as exc:
            st.error(str(exc))
        else:
            st.session_state["proposal"] = pid
            st.success(f"Proposal {pid} stored ({status}).")
else:
    st.info("Run a labeling round first (Rounds page).")

with page_session() as session:
    proposals = list_proposals(session=session)
if not proposals:
    st.info("No proposals yet.")
    st.stop()

st.subheader("Review")
labels = {f"#{x.id} {x.leaf_a} vs {x.leaf_b} ({x.status})": x.id for x in proposals}
ids = list(labels.values())
wanted = st.session_state.get("proposal", ids[0])
choice = st.selectbox("Proposal", list(labels), index=ids.index(wanted) if wanted in ids else 0)
pid = labels[choice]
with page_session() as session:
    row = require_proposal(pid, session=session)
    view = {
        "leaf_a": row.leaf_a,
        "leaf_b": row.leaf_b,
        "a_old": row.def_a_old,
        "b_old": row.def_b_old,
        "a_new": row.def_a_new or "",
        "b_new": row.def_b_new or "",
        "status": row.status,
        "model": row.model,
        "evidence": list(row.evidence),
        "raw": row.raw_output or "",
        "error": row.request.get("error", ""),
        "result": (
            version_label(get_version(row.resulting_version_id, session=session))
            if row.resulting_version_id
            else None
        ),
    }

st.text(f"Status: {view['status']}   Model: {view['model']}")
if view["result"]:
    st.text(f"Accepted as {view['result']}")
if view["error"]:
    st.warning(f"The model's reply could not be parsed: {view['error']}")
for side, leaf, old, new in (
    ("1", view["leaf_a"], view["a_old"], view["a_new"]),
    ("2", view["leaf_b"], view["b_old"], view["b_new"]),
):
    st.markdown(f"**Definition {side}: {escape_markdown(leaf)}**")
    left, right = st.columns(2)
    left.caption("current")
    left.markdown(diff_html(old, new, side="old"), unsafe_allow_html=True)
    right.caption("proposed")
    right.markdown(diff_html(old, new, side="new"), unsafe_allow_html=True)

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
    edit_a = st.text_area(f"Definition 1 ({view['leaf_a']})", view["a_new"], key=f"a-{pid}")
    edit_b = st.text_area(f"Definition 2 ({view['leaf_b']})", view["b_new"], key=f"b-{pid}")
    c1, c2 = st.columns(2)
    if c1.button("Accept (with edits)", key="accept"):
        try:
            with page_session() as session:
                version = accept_proposal(pid, session=session, def_a=edit_a, def_b=edit_b)
                label = version_label(version)
        except DriftLensError as exc:
            st.error(str(exc))
        else:
            st.success(f"Accepted: new version {label}.")
    if c2.button("Reject", key="reject"):
        with page_session() as session:
            reject_proposal(pid, session=session)
        st.success(f"Rejected proposal {pid}.")
