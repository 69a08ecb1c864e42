"""CLI tables show stored names literally: a labeler named with Rich markup stays text."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.cli import annotate_cmds
from study.reasoning.human.responses import LabelCheckResult

HOSTILE = "[bold]x[/]"


def _aggregate(*, items: list[int], kept: int, min_lead_time_s: float) -> SimpleNamespace:
    """A stand-in for a study's aggregate: what ``_print_apply`` reads of it (no fast
    annotation dropped, every kept annotation counted, alpha 0.5, no disagreement)."""
    return SimpleNamespace(
        items=items,
        n_kept=kept,
        n_annotations=kept,
        n_dropped_fast=0,
        config=SimpleNamespace(min_lead_time_s=min_lead_time_s),
        alpha=0.5,
        disagreement_rate=0.0,
    )


def test_label_check_table_prints_a_markup_labeler_name_literally() -> None:
    aggregate = _aggregate(items=[1], kept=1, min_lead_time_s=2.0)
    accuracy = SimpleNamespace(
        labeler=HOSTILE, items=3, decided=3, yes=2, no=1, unsure=0, accuracy=2 / 3
    )
    result = LabelCheckResult(
        study="label_check",
        aggregate=aggregate,  # type: ignore[arg-type]
        labeler_accuracy=(accuracy,),  # type: ignore[arg-type]
    )
    with annotate_cmds._out.capture() as captured:
        annotate_cmds._print_apply(result)
    assert HOSTILE in captured.get()


def test_test_awareness_table_prints_a_markup_arm_name_and_the_left_out_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from annotation.agreement import RatingAgreement
    from app.cli.console import SafeConsole
    from study.disposition.human.kinds import AwarenessRate, TestAwarenessResult

    # a wide console of the same kind: no wrapping inside the cells
    monkeypatch.setattr(
        annotate_cmds, "_out", SafeConsole(highlight=False, markup=False, width=200)
    )

    aggregate = _aggregate(items=[1, 2, 3], kept=5, min_lead_time_s=10.0)
    rate = AwarenessRate(HOSTILE, 2, 2, 4.25, 3.5, 5.0, 1, 0.5, 0.09, 0.91)
    agreement = RatingAgreement(2, 2, 1, 2, 0.61, 2, 0.5, 1.0, 0.5, 0.6)
    result = TestAwarenessResult(
        study="test_awareness",
        aggregate=aggregate,  # type: ignore[arg-type]
        awareness=(rate,),
        awareness_agreement=(agreement,),
    )
    with annotate_cmds._out.capture() as captured:
        annotate_cmds._print_apply(result)
    text = captured.get()
    assert HOSTILE in text and "4.25" in text and "3.50 to 5.00" in text
    assert "1 left out" in text and "ordinal alpha 0.610" in text
