"""The disposition judges' settings: collected per judge and score kind, never mixed.

The category classifier, the graded review and the test-awareness judge each store their
request's settings with every score (:func:`study.strict_json.judge_settings`). A study's
analysis collects them through :mod:`study.judge_settings` (the mechanism every
instrument uses), refuses a judge whose scores of one kind mix settings, and the report
prints them as provenance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from study.judge_settings import (
    collect_settings,
    provenance_sections,
    refuse_mixed_settings,
    settings_lines,
)

#: How each score kind's judge is named in the provenance rows.
KIND_NAMES = {"category": "classifier", "graded": "graded review", "awareness": "test awareness"}
_COLS = [("judge", "judge", None), ("settings", "prompt, sampling and seed of every score", None)]
NOTE = (
    "Each judge's scores of one kind were all given under these settings (mixed settings are "
    "refused, never pooled)."
)


def study_judge_settings(
    arms: Sequence[Any], *, session: Any, what: str
) -> tuple[tuple[str, str], ...]:
    """``(judge (kind), settings)`` rows of every score stored for the arms' responses.

    Raises:
        InputError: one judge's scores of one kind were given under different settings.
    """
    from storage.repo.disposition import arm_responses, scores_for

    ids = [int(r.id) for r in arm_responses([a.id for a in arms], session=session) if r.id]
    by_judge = collect_settings(
        (f"{s.judge_model} ({name})", s.settings)
        for kind, name in KIND_NAMES.items()
        for s in scores_for(ids, session=session, kind=kind)
    )
    refuse_mixed_settings(by_judge, what=what)
    return tuple((j, t) for j, t in settings_lines(by_judge))


def settings_sections(rows: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The report's "Judge settings (provenance)" section as HTML parts and Markdown parts."""
    return provenance_sections(
        rows, note=NOTE, empty="No judge has scored these responses yet.", columns=_COLS
    )


def robustness_sections(result: Any) -> tuple[list[str], list[str]]:
    """The report's "Judge robustness" section (the kept result, or "not assessed")."""
    from study.judge_robustness.report import HEADING, robustness_lines
    from study.report.html import esc
    from study.report.markdown import md_escape

    lines = robustness_lines([result] if result is not None else [])
    html = [f"<h2>{HEADING}</h2>", *(f"<p>{esc(line)}</p>" for line in lines)]
    return html, [f"## {HEADING}\n", *(md_escape(line) + "\n" for line in lines)]
