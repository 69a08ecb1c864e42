"""Memory conflicts: browse judged answers — the bank by provenance, the answer, both judges."""

from __future__ import annotations

import streamlit as st

from app.ui.db import page_session
from app.ui.safe import escape_markdown, inline_html
from study.conflicts.cases import case_views, conflict_runs
from study.judge_robustness.report import robustness_lines
from study.judge_robustness.service import stored_robustness

_COLOURS = {"core": "#1f5fa8", "background": "#777777", "distractor": "#c06000"}
_DIMS = ("d1", "d2", "d3", "d4", "d5")

st.title("Memory conflicts")
st.caption(
    "Each answer with the memory bank it saw (coloured by provenance, which the model never "
    "saw), and both judges side by side; cases where the judges differ by two points or more "
    "come first. Run `driftlens conflicts demo` for a simulated example."
)

with page_session() as session:
    runs = conflict_runs(session=session)
    if not runs:
        st.info("No memory-conflict runs yet. Run `driftlens conflicts demo` to create some.")
        st.stop()
    names = [r.name for r in runs]
    if any(r.simulated for r in runs):
        st.error("SIMULATED DATA: simulated response models and judges.")
    name = st.selectbox("Run", names)
    only_stress = st.checkbox("Only cases where the judges differ by ≥ 2", value=False)
    cases = case_views(str(name), session=session)
    robustness = stored_robustness("conflicts", str(name), session=session)

if only_stress:
    cases = [c for c in cases if c.max_gap >= 2]
if not cases:
    st.info("No judged answers in this run yet (`driftlens conflicts judge`).")
    st.stop()
st.metric("Judged answers", len(cases))
st.subheader("Judge robustness")
for line in robustness_lines([robustness] if robustness is not None else []):
    st.text(line)  # plain text: judge names are user input
labels = [f"{c.instance_id} · N{c.n_distractors} · gap {c.max_gap:g}" for c in cases]
pick = st.selectbox("Case", range(len(cases)), format_func=lambda i: labels[i])
case = cases[int(pick)]

st.markdown(
    f"**{escape_markdown(case.instance_id)}** · {escape_markdown(case.type)}"
    f"{' · high-risk' if case.high_risk else ''} · {case.n_distractors} distractor(s) · "
    f"bank observability {escape_markdown(case.observability)}"
)
st.markdown(f"**Request:** {escape_markdown(case.request)}")
legend = " ".join(f"<span style='color:{c}'>■ {p}</span>" for p, c in _COLOURS.items())
bank = "".join(
    f"<li style='color:{_COLOURS.get(p, '#000')}'>{inline_html(t)}</li>" for t, p in case.memories
)
st.markdown(f"{legend}<ul>{bank}</ul>", unsafe_allow_html=True)
st.markdown("**Answer**")
st.text(case.answer)

cols = st.columns(max(1, len(case.judges)))
for col, j in zip(cols, case.judges, strict=False):
    with col:
        st.markdown(f"**{escape_markdown(j.judge)}** ({escape_markdown(j.status)})")
        rows = [
            {
                "dimension": d.upper(),
                "score": "n/a" if j.scores.get(d) is None else f"{j.scores[d]:g}",
                "quote": j.quotes.get(d, ""),
            }
            for d in _DIMS
        ]
        if case.high_risk:
            rows.append({"dimension": "D6", "score": j.d6 or "–", "quote": j.quotes.get("d6", "")})
        st.dataframe(rows, hide_index=True)
