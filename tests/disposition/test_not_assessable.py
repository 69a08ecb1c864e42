"""Disposition: an arm whose responses were mostly left unclassified is not assessable.

Neither a drift significance (p) nor an equivalence verdict is read from it, and an arm
compared with a mostly unclassified reference is not assessable either.
"""

from __future__ import annotations

from study.disposition.analysis import analyze_rates, validate_rate_table
from study.disposition.sim.model import ArmSetting
from tests.disposition.conftest import sim_frame

ARMS = [("d000", ArmSetting(0)), ("d075", ArmSetting(75)), ("d100", ArmSetting(100))]


def _arms(blank: str | None) -> dict[str, dict[str, object]]:
    df = sim_frame(1, ARMS, batteries=("self_interest",))
    if blank is not None:
        rows = df.index[df["arm"] == blank]
        df.loc[rows[: len(rows) * 3 // 10], "aligned"] = ""  # 30% unclassified
    stats = analyze_rates(validate_rate_table(df), reference="d000", n_boot=200, seed=0)
    arms: dict[str, dict[str, object]] = stats.to_dict()["batteries"]["self_interest"]["arms"]
    return arms


def test_an_arm_under_the_usable_share_has_no_significance_or_equivalence() -> None:
    whole = _arms(None)
    assert whole["d100"]["assessable"] and whole["d100"]["p_value"] is not None
    assert whole["d100"]["within_bound"] is False  # the -12 pp drift is a finding
    arms = _arms("d100")
    d100 = arms["d100"]
    assert d100["assessable"] is False
    assert d100["p_value"] is None and d100["p_adjusted"] is None
    assert d100["within_bound"] is None and d100["equivalence_bound"] is None
    assert "not assessable: only" in str(d100["not_assessable"])
    assert "responses classified (70%)" in str(d100["not_assessable"])
    assert arms["d075"]["assessable"] is True


def test_a_mostly_unclassified_reference_withholds_every_comparison() -> None:
    arms = _arms("d000")
    assert all(a["assessable"] is False for a in arms.values())
    assert arms["d075"]["p_value"] is None
