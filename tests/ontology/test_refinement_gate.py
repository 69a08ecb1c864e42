"""The refinement loop's gate on hand-made labels: passes a real gain, rejects the rest."""

from __future__ import annotations

from ontology.refinement_gate import (
    LabelMap,
    gate_statistics,
    impact_share,
    pair_table,
    split_steps,
    step_agreement,
)

LABELERS = ("x", "y", "z")
A, B, C = "leaf A", "leaf B", "leaf C"


def _labels(split: str, agreeing: str, other: str) -> LabelMap:
    """30 responses of three steps: a split A/B step, an agreed A step, a step of C."""
    out: LabelMap = {}
    for rid in range(30):
        out[(rid, 0)] = dict(zip(LABELERS, split.split(","), strict=True))
        out[(rid, 1)] = dict(zip(LABELERS, agreeing.split(","), strict=True))
        out[(rid, 2)] = dict(zip(LABELERS, other.split(","), strict=True))
    return out


BEFORE = _labels(f"{A},{A},{B}", f"{A},{A},{A}", f"{C},{C},{C}")


def _gate(after: LabelMap):
    split = split_steps(BEFORE, LABELERS, (A, B), holdout=0.3, control=30, seed=1)
    return split, gate_statistics(BEFORE, after, split, LABELERS, (A, B), margin=0.02, seed=1)


def test_step_agreement_and_pair_table() -> None:
    assert step_agreement({"x": A, "y": A, "z": B}, LABELERS) == 1 / 3
    [row] = pair_table(BEFORE, LABELERS)
    assert (row.leaf_a, row.leaf_b, row.split) == (A, B, 60)


def test_split_holds_out_split_and_agreeing_steps_of_the_pair() -> None:
    split, _ = _gate(BEFORE)
    assert not set(split.evidence) & set(split.heldout)
    assert {k[1] for k in split.heldout} == {0, 1}  # split and agreeing steps of the pair
    assert {k[1] for k in split.evidence} == {0}
    assert {k[1] for k in split.control} == {2}
    assert len([k for k in split.heldout if k[1] == 0]) == 9  # 30 % of 30
    again = split_steps(BEFORE, LABELERS, (A, B), holdout=0.3, control=30, seed=1)
    assert again == split


def test_a_real_gain_passes() -> None:
    _, gate = _gate(_labels(f"{A},{A},{A}", f"{A},{A},{A}", f"{C},{C},{C}"))
    assert gate.passed and gate.low > 0.02 and gate.gain > 0.3, gate


def test_no_gain_is_rejected_with_the_bound_in_the_reason() -> None:
    _, gate = _gate(BEFORE)
    assert not gate.passed
    assert "lower 95 % bound" in gate.reasons[0]


def test_a_coin_flip_that_breaks_agreed_steps_is_rejected() -> None:
    """Split steps gain (1/3 -> 1/3 or better) but agreed steps of the pair are lost."""
    after = _labels(f"{A},{B},{A}", f"{A},{B},{B}", f"{C},{C},{C}")
    _, gate = _gate(after)
    assert not gate.passed and gate.gain < 0


def test_another_leaf_falling_rejects_a_gain() -> None:
    after = _labels(f"{A},{A},{A}", f"{A},{A},{A}", f"{C},{C},{A}")
    _, gate = _gate(after)
    assert gate.low > 0.02
    assert not gate.passed
    assert any("'leaf C' fell" in r for r in gate.reasons), gate.reasons


def test_impact_share_weights_the_pair_and_the_other_steps() -> None:
    split, _ = _gate(BEFORE)
    none = impact_share(BEFORE, BEFORE, split, LABELERS, pair_weight=0.5, seed=1)
    assert none["share"] == 0.0
    # every split step changes one label in three; agreed steps and leaf C stay
    after = _labels(f"{A},{A},{A}", f"{A},{A},{A}", f"{C},{C},{C}")
    est = impact_share(BEFORE, after, split, LABELERS, pair_weight=2 / 3, seed=1)
    held = [k for k in split.heldout]
    pair_rate = sum(1 for k in held if k[1] == 0) / (3 * len(held))
    assert abs(est["share"] - 2 / 3 * pair_rate) < 1e-9
    assert est["low"] <= est["share"] <= est["high"]
