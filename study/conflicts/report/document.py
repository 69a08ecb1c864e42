"""The memory-conflict report as it reads: its typed content and its HTML and Markdown.

:class:`ConflictReport` is what :func:`study.conflicts.report.build_report` computes; the
sections (title, header, rows, note) are rendered the same way to ``report.html`` (cells
escaped with ``study.report.html.esc``) and ``report.md`` (``md_escape``), and stored as
``report_tables.json``.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from driftlens_core.rubric import INTERVAL_METHOD
from study.assessable import USABLE_SHARE_MIN, Usable
from study.conflicts.abstention import AbstentionRow
from study.conflicts.analysis import (
    ALL,
    DIMENSIONS,
    ConflictStats,
    TotalAgreementRow,
)
from study.conflicts.calibrated import CalibratedScores, calibrated_section
from study.conflicts.report.abstention import abstention_sections, headline_section
from study.judge_robustness.report import HEADING as ROBUSTNESS_HEADING
from study.judge_robustness.report import robustness_lines
from study.judge_robustness.result import RobustnessResult
from study.report.html import esc
from study.report.markdown import md_escape

#: The heading of the rubric judge's judge-human calibration section.
CALIBRATION_HEADING = "Judge–human calibration (rubric)"

DIM_NAMES: dict[str, str] = {
    "d1": "D1 perception",
    "d2": "D2 causal reasoning",
    "d3": "D3 calibration",
    "d4": "D4 clarification",
    "d5": "D5 faithfulness",
    "total": "total (0-20)",
}

#: The banner of a report any of whose answers or judgements are simulated.
SIM_NOTE = (
    "SIMULATED DATA — answers or judgements come from the workbench's built-in simulator; "
    "the numbers check the instrument, they say nothing about any real model."
)


@dataclass(frozen=True)
class CurvePoint:
    """Mean total at one distractor dose for one judge (models pooled)."""

    judge: str
    distractors: int
    mean: float
    ci_low: float
    ci_high: float
    n: int


@dataclass(frozen=True)
class ConflictReport:
    """What the report shows, and where it was written."""

    stats: ConflictStats
    curve: tuple[CurvePoint, ...]
    lowest_dimension: dict[tuple[str, str], str]
    observability: tuple[dict[str, Any], ...]
    track_gap: tuple[dict[str, Any], ...]
    files: dict[str, str] = field(default_factory=dict)
    policy_scores: tuple[dict[str, Any], ...] = ()
    policy_mixture: tuple[dict[str, Any], ...] = ()
    # judge robustness of the oracle runs where it was run (study/judge_robustness)
    robustness: tuple[RobustnessResult, ...] = ()
    # per judge: how many answers its verdicts could be read for (study/assessable)
    usable: tuple[tuple[str, Usable], ...] = ()
    # per judge: the settings its verdicts were given under (model, prompt, sampling, seed)
    judge_settings: tuple[tuple[str, str], ...] = ()
    # the rubric judge against the human majority of a pulled conflict_rubric study
    # (study/judge_robustness/human_section.py); "Not assessed" lines without one
    calibration: tuple[str, ...] = ()
    # the no-memory baseline (study/conflicts/baseline.py): judge × measure rows
    baseline: tuple[dict[str, Any], ...] = ()
    #: some answer or judgement came from the workbench's simulator (banner on top)
    simulated: bool = False
    #: the headline sentences, read against the no-memory baseline (report/abstention.py)
    headline: tuple[str, ...] = ()
    #: abstention rates of every arm: the oracle runs per dose, the no-memory and the
    #: policy runs (study/conflicts/abstention.py)
    abstention: tuple[AbstentionRow, ...] = ()
    #: the judge-decided means calibrated to a pulled conflict_rubric slice (PPI++,
    #: study/conflicts/calibrated.py); ``None`` without one
    calibrated: CalibratedScores | None = None
    #: the model roles stored with the report's runs, one line per run (llm/roles.py)
    roles: tuple[str, ...] = ()
    #: per judge: (judge, verdicts that did not parse after the fallback, verdicts asked)
    unscored: tuple[tuple[str, int, int], ...] = ()

    def notice_lines(self) -> list[str]:
        """The roles and the unscored counts, as the CLI prints them after the report."""
        out = list(self.roles)
        out += [
            f"Judge {j}: {n} of {total} unscored (unparseable after the fallback; excluded "
            "from every estimate)."
            for j, n, total in self.unscored
        ]
        return out

    @property
    def d4_lowest_everywhere(self) -> bool:
        """Whether D4 is the lowest dimension for every model under every judge."""
        return bool(self.lowest_dimension) and all(
            d == "d4" for d in self.lowest_dimension.values()
        )


def _fmt(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{float(x):.{digits}f}"


def _score_rows(report: ConflictReport) -> list[list[str]]:
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in report.stats.scores:
        cells.setdefault((r.model, r.judge, r.type), {})[r.dimension] = (
            f"{_fmt(r.mean)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]"
        )
    rows = []
    for (model, judge, type_), dims in sorted(
        cells.items(), key=lambda kv: (kv[0][0], kv[0][2] != ALL, kv[0][2], kv[0][1])
    ):
        rows.append([model, type_, judge, *(dims.get(d, "–") for d in (*DIMENSIONS, "total"))])
    return rows


def report_sections(report: ConflictReport) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, header, rows, note) of every table, shared by HTML and Markdown."""
    s = report.stats
    out: list[tuple[str, list[str], list[list[str]], str]] = []
    if report.headline:
        out.append(headline_section(report.headline))
    out.append(
        (
            "Rubric scores (mean [95% CI], instance-cluster bootstrap; judges side by side)",
            ["model", "type", "judge", *(DIM_NAMES[d] for d in (*DIMENSIONS, "total"))],
            _score_rows(report),
            "Scores use the full bank (the largest distractor dose). D1/D2 are left out where "
            "the bank kept no observable conflict, D3 where the answer abstained (the total "
            "is then 5 × the mean of the dimensions that apply).",
        )
    )
    if report.calibrated is not None and report.calibrated.rows:
        out.append(calibrated_section(report.calibrated))
    out.append(
        (
            "Lowest dimension per model and judge",
            ["model", "judge", "lowest dimension"],
            [[m, j, DIM_NAMES[d]] for (m, j), d in sorted(report.lowest_dimension.items())],
            "D4 lowest for every model and judge: "
            + ("yes" if report.d4_lowest_everywhere else "no"),
        )
    )
    notes = [n for n in s.notes if "action class" in n]
    out.extend(
        abstention_sections(
            report.abstention or s.abstention, s.actions, notes=notes, agreement=s.action_agreement
        )
    )
    if s.d6:
        out.append(
            (
                "D6 commitment on high-risk instances (share [Wilson 95% CI])",
                ["model", "judge", "flag", "share", "k / n"],
                [
                    [
                        r.model,
                        r.judge,
                        r.flag,
                        f"{_fmt(r.share)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]",
                        f"{r.k} / {r.n}",
                    ]
                    for r in s.d6
                ],
                "D6 is outside the D1-D5 total.",
            )
        )
    if report.curve:
        out.append(
            (
                "Distractor curve (mean total, models pooled)",
                ["judge", "distractors", "mean [95% CI]", "n"],
                [
                    [
                        c.judge,
                        str(c.distractors),
                        f"{_fmt(c.mean)} [{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]",
                        str(c.n),
                    ]
                    for c in report.curve
                ],
                "",
            )
        )
    if s.distractor_effect:
        out.append(
            (
                "Paired distractor effect on the total (most minus fewest distractors)",
                ["model", "judge", "from→to", "mean diff [95% CI]", "MDD", "equivalence ±"],
                [
                    [
                        r.model,
                        r.judge,
                        f"{r.from_}→{r.to}",
                        f"{_fmt(r.mean_diff)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]",
                        _fmt(r.mdd),
                        _fmt(r.equivalence_bound),
                    ]
                    for r in s.distractor_effect
                ],
                "Paired by instance and model; 'all' pools the models.",
            )
        )
    if s.judge_agreement:
        rows = []
        for r in s.judge_agreement:
            pair = f"{r.judge_a} vs {r.judge_b}"
            if isinstance(r, TotalAgreementRow):
                rows.append(
                    [
                        pair,
                        "total",
                        f"Pearson {_fmt(r.pearson)} [{_fmt(r.pearson_ci_low)}, "
                        f"{_fmt(r.pearson_ci_high)}]; Spearman {_fmt(r.spearman)} "
                        f"[{_fmt(r.spearman_ci_low)}, {_fmt(r.spearman_ci_high)}]",
                        "",
                        "",
                        "",
                        "",
                    ]
                )
            else:
                rows.append(
                    [
                        pair,
                        DIM_NAMES[r.dimension],
                        _fmt(r.qwk),
                        _fmt(r.exact),
                        _fmt(r.within_one),
                        _fmt(r.mae),
                        _fmt(r.alpha_ordinal),
                    ]
                )
        out.append(
            (
                "Judge agreement (the two judges are never averaged)",
                ["judges", "dimension", "QWK", "exact", "within one", "MAE", "α ordinal"],
                rows,
                "",
            )
        )
    if s.agreement_by_type:
        out.append(
            (
                "Agreement by conflict type (dimension-level pairs, D1-D5 pooled)",
                ["raters", "type", "within one", "exact", "MAE", "QWK", "pairs"],
                [
                    [
                        f"{r.judge_a} vs {r.judge_b}",
                        r.type,
                        _fmt(r.within_one),
                        _fmt(r.exact),
                        _fmt(r.mae),
                        _fmt(r.qwk),
                        str(r.n),
                    ]
                    for r in s.agreement_by_type
                ],
                "The same table reads human validation: give two annotators' scores as two "
                "'judges' to `driftlens conflicts stats`.",
            )
        )
    if report.observability:
        out.append(
            (
                "Pipeline track: did the extracted bank keep the conflict? (Wilson 95% CI)",
                ["run", "label", "share", "n"],
                [
                    [
                        o["run"],
                        o["label"],
                        f"{_fmt(o['share'])} [{_fmt(o['ci_low'])}, {_fmt(o['ci_high'])}]",
                        str(o["n"]),
                    ]
                    for o in report.observability
                ],
                "None = no observable conflict: D1/D2 do not apply to those answers.",
            )
        )
    if report.track_gap:
        out.append(
            (
                "Track gap: oracle minus pipeline mean, by observability label",
                ["model", "judge", "label", "n", *(DIM_NAMES[d] for d in DIMENSIONS)],
                [
                    [
                        g["model"],
                        g["judge"],
                        g["label"],
                        str(g["n"]),
                        *(_fmt(g[d]) for d in DIMENSIONS),
                    ]
                    for g in report.track_gap
                ],
                "",
            )
        )
    if report.policy_scores:
        cells: dict[tuple[str, str], dict[str, str]] = {}
        for p in report.policy_scores:
            cells.setdefault((p["policy"], p["judge"]), {})[p["dimension"]] = (
                f"{_fmt(p['mean'])} [{_fmt(p['ci_low'])}, {_fmt(p['ci_high'])}]"
            )
        out.append(
            (
                "Policies (full bank; mean [95% CI])",
                ["policy", "judge", *(DIM_NAMES[d] for d in (*DIMENSIONS, "total"))],
                [
                    [k[0], k[1], *(v.get(d, "–") for d in (*DIMENSIONS, "total"))]
                    for k, v in sorted(cells.items())
                ],
                "Heuristic baselines write fixed answers from the bank; [caap] is the two-stage "
                "conflict-aware action policy on the named backbone.",
            )
        )
    if report.policy_mixture:
        out.append(
            (
                "Conflict-aware policy: chosen action within type (Wilson 95% CI)",
                ["run", "type", "action", "share", "k / n"],
                [
                    [
                        m["run"],
                        m["type"],
                        m["action"],
                        f"{_fmt(m['share'])} [{_fmt(m['ci_low'])}, {_fmt(m['ci_high'])}]",
                        f"{m['k']} / {m['n']}",
                    ]
                    for m in report.policy_mixture
                ],
                "",
            )
        )
    if report.baseline:
        out.append(
            (
                "No-memory baseline (the same requests with an empty bank, the same rubric)",
                [
                    "judge",
                    "model",
                    "measure",
                    "with memory",
                    "no memory",
                    "difference [95% CI]",
                    "n",
                ],
                [
                    [
                        b["judge"],
                        b["model"],
                        b["measure"],
                        _fmt(b["with_memory"]),
                        _fmt(b["no_memory"]),
                        f"{_fmt(b['difference'])} [{_fmt(b['ci_low'])}, {_fmt(b['ci_high'])}]",
                        str(b["n_instances"]),
                    ]
                    for b in report.baseline
                ],
                "Paired by instance, answers at the largest dose; a difference whose interval "
                "reaches 0 says the bank did not change the score.",
            )
        )
    else:
        out.append(
            (
                "No-memory baseline",
                ["finding"],
                [
                    [
                        "Not assessed: no no-memory run given (driftlens conflicts generate "
                        "--track no-memory, then report --baseline RUN)."
                    ]
                ],
                "",
            )
        )
    if report.judge_settings:
        out.append(
            (
                "Judge settings (provenance)",
                ["judge", "prompt, sampling and seed of every verdict"],
                [[j, t] for j, t in report.judge_settings],
                "Each judge's verdicts were all given under these settings (mixed settings "
                "are refused, never pooled).",
            )
        )
    if report.roles:
        out.append(
            (
                "Model roles",
                ["roles"],
                [[line] for line in report.roles],
                "Who answered and who judged each run (a judge that is the model under test "
                "is refused unless --allow-self-judging).",
            )
        )
    if report.unscored:
        out.append(
            (
                "Unscored verdicts",
                ["judge", "unscored"],
                [[j, f"{n} of {total} unscored"] for j, n, total in report.unscored],
                "A verdict that does not parse after the structured-output fallback and one "
                "repair is stored as unscored: it is counted here and left out of every "
                "estimate, never read as a score.",
            )
        )
    if report.usable:
        out.append(
            (
                "Usable share per judge",
                ["judge", "answers judged readably"],
                [[j, u.sentence] for j, u in report.usable],
                "A judge with under "
                f"{USABLE_SHARE_MIN:.0%} of the answers judged readably is not assessable: its "
                "distractor effect, equivalence bound and lowest dimension are withheld.",
            )
        )
    out.append(
        (
            ROBUSTNESS_HEADING,
            ["finding"],
            [[line] for line in robustness_lines(report.robustness)],
            "The stored judge re-judged with new seeds and swapped for other judges on a "
            "stratified sample of answers.",
        )
    )
    if report.calibration:
        out.append(
            (
                CALIBRATION_HEADING,
                ["finding"],
                [[line] for line in report.calibration],
                "The rubric judge's D1-D5 scores of the report's answers beside the "
                "annotators' agreed score (a row per answer and dimension, 0-4 ordinal).",
            )
        )
    return out


def _interval_note(report: ConflictReport) -> str:
    """Which intervals the report shows (every mean and effect; shares are Wilson)."""
    return (
        f"Intervals: 95%, {INTERVAL_METHOD}, B = {report.stats.bootstrap} replicates; "
        "shares: Wilson 95% intervals."
    )


def render_html(report: ConflictReport, figure: Path | None) -> str:
    """The HTML report (every cell escaped)."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>Memory conflicts report</title>",
        "<style>body{font-family:sans-serif;max-width:1200px;margin:1rem auto}"
        "table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #ccc;"
        "padding:.2rem .5rem;font-size:.85rem}.note{color:#555}</style></head><body>",
        "<h1>Memory conflicts report</h1>",
        *(
            [f"<p style='background:#fff3cd;padding:.5rem'><b>{esc(SIM_NOTE)}</b></p>"]
            if report.simulated
            else []
        ),
        f"<p class='note'>{esc(_interval_note(report))}</p>",
    ]
    for title, header, rows, note in report_sections(report):
        parts.append(f"<h2>{esc(title)}</h2>")
        if note:
            parts.append(f"<p class='note'>{esc(note)}</p>")
        parts.append("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>")
        for row in rows:
            parts.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>")
        parts.append("</table>")
    if figure is not None:
        # embedded, as in the other reports: the HTML file stands alone when moved or mailed
        uri = "data:image/png;base64," + base64.b64encode(figure.read_bytes()).decode("ascii")
        parts.append(f"<h2>Distractor curve</h2><img src='{uri}' alt='distractor curve'>")
    parts.append("</body></html>")
    return "\n".join(parts)


def render_markdown(report: ConflictReport) -> str:
    """The Markdown report (every cell escaped)."""
    lines = ["# Memory conflicts report", ""]
    if report.simulated:
        lines += [f"**{md_escape(SIM_NOTE)}**", ""]
    lines += [md_escape(_interval_note(report)), ""]
    for title, header, rows, note in report_sections(report):
        lines += [f"## {md_escape(title)}", ""]
        if note:
            lines += [md_escape(note), ""]
        lines.append("| " + " | ".join(md_escape(h) for h in header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)
