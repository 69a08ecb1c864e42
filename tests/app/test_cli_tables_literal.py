"""CLI tables show stored names literally: a labeler named with Rich markup stays text."""

from __future__ import annotations

from types import SimpleNamespace

from app.cli import annotate_cmds

HOSTILE = "[bold]x[/]"


def test_label_check_table_prints_a_markup_labeler_name_literally() -> None:
    aggregate = SimpleNamespace(
        items=[1],
        n_kept=1,
        n_annotations=1,
        n_dropped_fast=0,
        config=SimpleNamespace(min_lead_time_s=2.0),
        alpha=0.5,
        disagreement_rate=0.0,
    )
    accuracy = SimpleNamespace(
        labeler=HOSTILE, items=3, decided=3, yes=2, no=1, unsure=0, accuracy=2 / 3
    )
    result = SimpleNamespace(study="label_check", aggregate=aggregate, labeler_accuracy=[accuracy])
    with annotate_cmds._out.capture() as captured:
        annotate_cmds._print_apply(result)  # type: ignore[arg-type]
    assert HOSTILE in captured.get()
