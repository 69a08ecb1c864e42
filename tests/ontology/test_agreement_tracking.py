"""Agreement tracking against brute force on random label sets (Hypothesis)."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ontology.agreement_tracking import LabelRecord, compute_agreement

LEAVES = ("a", "b", "c", "unmapped")


@st.composite
def label_sets(draw: st.DrawFn) -> list[LabelRecord]:
    n_labelers = draw(st.integers(2, 4))
    n_steps = draw(st.integers(1, 12))
    out = []
    for step in range(n_steps):
        for k in range(n_labelers):
            if draw(st.booleans()) or k < 2:  # some labels missing, never all
                leaf = draw(st.sampled_from(LEAVES))
                out.append(LabelRecord(step // 3, step % 3, f"L{k}", f"root-{leaf}", leaf))
    return out


@settings(max_examples=60, deadline=None)
@given(label_sets())
def test_pairwise_confusion_and_rates_match_brute_force(records: list[LabelRecord]) -> None:
    got = compute_agreement(records, top=100)
    table: dict[tuple[int, int], dict[str, str]] = {}
    for r in records:
        table.setdefault((r.response_id, r.step_index), {})[r.labeler] = r.symbol
    assert got.n_steps == len(table)
    confusions: dict[tuple[str, str], int] = {}
    for a, b in itertools.combinations(got.labelers, 2):
        both = [v for v in table.values() if a in v and b in v]
        expected = 100.0 * sum(v[a] == v[b] for v in both) / len(both) if both else math.nan
        value = got.pairwise[f"{a}|{b}"]
        assert (math.isnan(value) and math.isnan(expected)) or value == expected
        for v in both:
            if v[a] != v[b]:
                key = (min(v[a], v[b]), max(v[a], v[b]))
                confusions[key] = confusions.get(key, 0) + 1
    assert {(p.leaf_a, p.leaf_b): p.count for p in got.most_confused} == confusions
    counts = [p.count for p in got.most_confused]
    assert counts == sorted(counts, reverse=True)
    for p in got.most_confused:
        assert 0.0 < p.rate <= 1.0
    # The confusion matrix is symmetric and its upper triangle holds the same counts.
    m = got.confusion
    index = {leaf: i for i, leaf in enumerate(got.leaves)}
    assert all(m[i][j] == m[j][i] for i in range(len(m)) for j in range(len(m)))
    for (a, b), n in confusions.items():
        assert m[index[a]][index[b]] == n
