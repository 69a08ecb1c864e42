"""The conflicts report's headline (read against the no-memory baseline) and abstention tables.

Sections are ``(title, header, rows, note)`` like every other section of
:func:`study.conflicts.report.document.report_sections`; cells are plain text, escaped by the
renderer. The headline gives, per model and judge, the total and how often the model
abstained, then per judge the D3–D5 sum and the abstention rate against the no-memory run
(a bank that makes the model abstain more or less is a finding).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from study.conflicts.abstention import AbstentionRow, ActionAgreementRow, ActionShareRow
from study.conflicts.actions import ACTIONS
from study.conflicts.baseline import ABSTENTION_MEASURE

Section = tuple[str, list[str], list[list[str]], str]

HEADLINE_HEADING = "Headline, read against the no-memory baseline"
ABSTENTION_HEADING = "Abstention and clarification (answers that ask, check or decline)"
ACTIONS_HEADING = "Action mix per model and judge (full bank; Wilson 95% CI)"
RULE_NOTE = (
    "An abstention (action clarify, verify or defer) recommends nothing: its D3 is not "
    "applicable (neither 0 nor 4), and its total is its other four scores × 5/4."
)


def _fmt(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{float(x):.{digits}f}"


def _ci(mean: Any, lo: Any, hi: Any) -> str:
    return f"{_fmt(mean)} [{_fmt(lo)}, {_fmt(hi)}]"


def _direction(row: Mapping[str, Any], up: str, down: str, flat: str) -> str:
    lo, hi = row.get("ci_low"), row.get("ci_high")
    if not all(isinstance(v, float) and math.isfinite(v) for v in (lo, hi)):
        return "not assessable (no paired instance)"
    assert isinstance(lo, float) and isinstance(hi, float)
    if lo > 0:
        return up
    if hi < 0:
        return down
    return flat


def headline_lines(
    totals: Sequence[tuple[str, str, Any]],
    abstention: Sequence[AbstentionRow],
    baseline: Sequence[Mapping[str, Any]],
    *,
    withheld: frozenset[str] = frozenset(),
) -> list[str]:
    """The headline sentences.

    Args:
        totals: ``(model, judge, score row of the total over all types)``.
        abstention: The oracle runs' abstention rows.
        baseline: The no-memory baseline rows (:func:`study.conflicts.baseline.baseline_rows`).
        withheld: Judges whose verdicts are not assessable (too few readable).
    """
    top = max((r.distractors for r in abstention), default=None)
    rate = {(r.model, r.judge): r for r in abstention if r.type == "all" and r.distractors == top}
    lines: list[str] = []
    for model, judge, tot in totals:
        if judge in withheld:
            lines.append(f"{model} under {judge}: not assessable (too few readable verdicts).")
            continue
        text = f"{model} under {judge}: total {_ci(tot.mean, tot.ci_low, tot.ci_high)} of 20"
        ab = rate.get((model, judge))
        if ab is None or ab.n == 0:
            text += "; abstention not assessed (the verdicts carry no action class)."
        else:
            text += (
                f"; abstained on {_ci(ab.rate, ab.ci_low, ab.ci_high)} of its answers "
                f"({ab.k} / {ab.n})"
                + (", their totals over D1, D2, D4, D5 × 5/4." if ab.k else ".")
            )
        lines.append(text)
    if not baseline:
        lines.append(
            "Not read against a baseline: no no-memory run given (driftlens conflicts "
            "generate --track no-memory, then report --baseline RUN)."
        )
        return lines
    for row in baseline:
        if row["judge"] in withheld:
            continue
        diff = _ci(row["difference"], row["ci_low"], row["ci_high"])
        if row["measure"] == "D3-D5 sum":
            verdict = _direction(
                row,
                "the bank raised it",
                "the bank lowered it",
                "no detectable difference",
            )
            lines.append(
                f"Against the no-memory baseline ({row['model']}, {row['judge']}): D3-D5 sum "
                f"{_fmt(row['with_memory'])} with memory vs {_fmt(row['no_memory'])} without, "
                f"difference {diff} over {row['n_instances']} instances: {verdict}."
            )
        elif row["measure"] == ABSTENTION_MEASURE:
            verdict = _direction(
                row,
                "memory makes the model abstain more",
                "memory makes the model abstain less",
                "no detectable change in abstention",
            )
            lines.append(
                f"Abstention ({row['model']}, {row['judge']}): {_fmt(row['with_memory'])} "
                "with memory vs "
                f"{_fmt(row['no_memory'])} without, difference {diff} over "
                f"{row['n_instances']} instances: {verdict}."
            )
    if not any(r["measure"] == ABSTENTION_MEASURE for r in baseline):
        lines.append(
            "Abstention against the baseline not assessed: the verdicts of one side carry "
            "no action class."
        )
    return lines


def headline_section(lines: Sequence[str]) -> Section:
    """The headline as a one-column section."""
    return (
        HEADLINE_HEADING,
        ["finding"],
        [[line] for line in lines],
        "Totals over all types at the largest dose (mean [95% CI]); the baseline compares "
        "D3-D5 (D1/D2 do not apply with an empty bank), paired by instance.",
    )


def abstention_sections(
    rows: Sequence[AbstentionRow],
    actions: Sequence[ActionShareRow],
    *,
    notes: Sequence[str] = (),
    agreement: Sequence[ActionAgreementRow] = (),
) -> list[Section]:
    """The abstention table (every arm and dose), the action mix and the judges' agreement
    on the action class."""
    out: list[Section] = []
    body = [
        [
            r.model,
            r.judge,
            str(r.distractors),
            r.type,
            "not assessed" if r.n == 0 else _ci(r.rate, r.ci_low, r.ci_high),
            f"{r.k} / {r.n}",
            str(r.unknown),
        ]
        for r in rows
    ]
    note = " ".join([RULE_NOTE, "Rates are shares of the answers with a known action.", *notes])
    if not body:
        body = [["–", "–", "–", "–", "not assessed: no judged answer", "–", "–"]]
    out.append(
        (
            ABSTENTION_HEADING + " (Wilson 95% CI)",
            ["model / arm", "judge", "distractors", "type", "abstention rate", "k / n", "unknown"],
            body,
            note,
        )
    )
    if actions:
        cells: dict[tuple[str, str], dict[str, str]] = {}
        for a in actions:
            cells.setdefault((a.model, a.judge), {})[a.action] = (
                f"{_ci(a.share, a.ci_low, a.ci_high)} ({a.k}/{a.n})"
            )
        out.append(
            (
                ACTIONS_HEADING,
                ["model", "judge", *ACTIONS],
                [[m, j, *(v.get(x, "–") for x in ACTIONS)] for (m, j), v in sorted(cells.items())],
                "The judge's action class of each answer (conflict-judge-v2).",
            )
        )
    if agreement:
        out.append(
            (
                "Judge agreement on the action class",
                ["judges", "answers", "same class", "Cohen's κ [95% CI]", "same abstain", "κ"],
                [
                    [
                        f"{r.judge_a} vs {r.judge_b}",
                        str(r.n),
                        _fmt(r.exact),
                        _ci(r.kappa, r.kappa_ci_low, r.kappa_ci_high),
                        _fmt(r.abstain_agreement),
                        _fmt(r.abstain_kappa),
                    ]
                    for r in agreement
                ],
                "Answers both judges classed; the interval resamples instances. 'same "
                "abstain': whether both read the answer as an abstention (κ undefined, –, "
                "when one reading is constant).",
            )
        )
    return out
