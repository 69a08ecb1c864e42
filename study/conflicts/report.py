"""The memory-conflict report: score table with CIs, D6 flags, distractor curve, agreement.

Written as HTML and Markdown (every stored or model-written text escaped) plus the plain
score table (``conflict_scores.csv``) that ``driftlens conflicts stats`` reads, so every
number can be recomputed from the CSV. Judges are always reported side by side; no table
averages them into one score.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session

from driftlens_core.proportions import proportion_interval
from driftlens_core.rubric import INTERVAL_METHOD, cluster_mean
from study.assessable import USABLE_SHARE_MIN, Usable
from study.conflicts.analysis import (
    ALL,
    DIMENSIONS,
    TABLE_COLUMNS,
    ConflictStats,
    TotalAgreementRow,
    analyze_scores,
    stored_table,
)
from study.judge_robustness.report import HEADING as ROBUSTNESS_HEADING
from study.judge_robustness.report import robustness_lines
from study.judge_robustness.service import RobustnessResult, stored_robustness
from study.report.folder import staged_report_folder
from study.report.html import esc
from study.report.markdown import md_escape
from study.safe_csv import write_frame_csv

DIM_NAMES: dict[str, str] = {
    "d1": "D1 perception",
    "d2": "D2 causal reasoning",
    "d3": "D3 calibration",
    "d4": "D4 clarification",
    "d5": "D5 faithfulness",
    "total": "total (0-20)",
}


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
    #: some answer or judgement came from the workbench's simulator (banner on top)
    simulated: bool = False

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


def _curve(df: pd.DataFrame, *, bootstrap: int, seed: int) -> list[CurvePoint]:
    rng = np.random.default_rng(seed)
    total = df[list(DIMENSIONS)].to_numpy(dtype=float).sum(axis=1)
    out: list[CurvePoint] = []
    for judge in sorted(set(df["judge"])):
        for n in sorted(set(df["distractors"])):
            mask = ((df["judge"] == judge) & (df["distractors"] == n)).to_numpy()
            cm = cluster_mean(
                df["instance_id"].to_numpy()[mask], total[mask], n_boot=bootstrap, seed=rng
            )
            out.append(CurvePoint(judge, int(n), cm.mean, cm.ci_low, cm.ci_high, cm.n))
    return out


def _observability(pipe: pd.DataFrame) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if pipe.empty:
        return rows
    # one label per (run, instance): every judge and dose shares it
    labels = pipe.drop_duplicates(["run", "instance_id"])
    for run, sub in labels.groupby("run", sort=True):
        n = len(sub)
        for label in ("FULL", "PARTIAL", "None"):
            p = proportion_interval(int((sub["observability"] == label).sum()), n)
            rows.append(
                {
                    "run": run,
                    "label": label,
                    "share": p.share,
                    "ci_low": p.ci_low,
                    "ci_high": p.ci_high,
                    "n": n,
                }
            )
    return rows


def _track_gap(oracle: pd.DataFrame, pipe: pd.DataFrame) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if pipe.empty or oracle.empty:
        return rows
    for (model, judge), p in pipe.groupby(["model", "judge"], sort=True):
        doses = set(p["distractors"])
        o = oracle[
            (oracle["model"] == model)
            & (oracle["judge"] == judge)
            & (oracle["distractors"].isin(doses))
        ]
        if o.empty:
            continue
        for label in ("FULL", "PARTIAL"):
            sub = p[p["observability"] == label]
            if sub.empty:
                continue
            row: dict[str, Any] = {"model": model, "judge": judge, "label": label, "n": len(sub)}
            for d in DIMENSIONS:
                row[d] = float(o[d].mean() - sub[d].mean())
            rows.append(row)
    return rows


def _curve_figure(curve: Sequence[CurvePoint], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for judge in sorted({c.judge for c in curve}):
        pts = [c for c in curve if c.judge == judge]
        x = [c.distractors for c in pts]
        y = [c.mean for c in pts]
        lo = [c.mean - c.ci_low for c in pts]
        hi = [c.ci_high - c.mean for c in pts]
        # judge names are user-chosen model names: keep them plain text in the legend
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, label=judge.replace("$", "＄"))
    ax.set_xlabel("distractors shown")
    ax.set_ylabel("mean D1-D5 total (95% CI)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


#: The banner of a report any of whose answers or judgements are simulated.
SIM_NOTE = (
    "SIMULATED DATA — answers or judgements come from the workbench's built-in simulator; "
    "the numbers check the instrument, they say nothing about any real model."
)


def _any_simulated(runs: Sequence[str], judges: set[str], *, session: Session) -> bool:
    """Whether a run was answered, or a judge is, by the in-process simulator."""
    from storage.repo.runs import get_run

    if any(str(j).startswith("sim/") for j in judges):
        return True
    return any(bool(r.simulated) for name in runs if (r := get_run(name, session=session)))


def build_report(
    oracle_runs: Sequence[str],
    *,
    session: Session,
    out_dir: Path,
    pipeline_runs: Sequence[str] = (),
    policy_runs: Sequence[str] = (),
    bootstrap: int = 2000,
    seed: int = 0,
) -> ConflictReport:
    """Compute everything from stored runs and write the report files.

    Raises:
        NotFoundError: a run does not exist.
        InputError: the runs hold no judged answers.
    """
    from storage.errors import InputError

    oracle = stored_table(oracle_runs, session=session)
    if oracle.empty:
        raise InputError(
            "The runs hold no judged answers yet; run `driftlens conflicts judge` first."
        )
    pipe = stored_table(pipeline_runs, session=session) if pipeline_runs else oracle.iloc[:0]
    stats = analyze_scores(oracle[list(TABLE_COLUMNS)], bootstrap=bootstrap, seed=seed)
    usable = judged_shares(oracle_runs, session=session)
    withheld = {j for j, u in usable.items() if not u.assessable}
    if withheld:
        # too few readable verdicts: no effect, equivalence or lowest dimension from them
        stats = replace(
            stats,
            distractor_effect=tuple(r for r in stats.distractor_effect if r.judge not in withheld),
        )
    lowest: dict[tuple[str, str], str] = {}
    for model in sorted(set(oracle["model"])):
        for judge in sorted(set(oracle["judge"])):
            means = {
                d: r.mean
                for d in DIMENSIONS
                if (r := stats.score(model, judge, ALL, d)) is not None and math.isfinite(r.mean)
            }
            if means and judge not in withheld:
                lowest[(model, judge)] = min(means, key=means.__getitem__)
    curve = _curve(oracle, bootstrap=bootstrap, seed=seed)
    policy_scores: list[dict[str, Any]] = []
    mixture: list[dict[str, Any]] = []
    if policy_runs:
        from study.conflicts.policy import action_mixture

        pol = stored_table(policy_runs, session=session)
        if not pol.empty:
            pstats = analyze_scores(pol[list(TABLE_COLUMNS)], bootstrap=bootstrap, seed=seed)
            for r in pstats.scores:
                if r.type == ALL:
                    policy_scores.append(
                        {
                            "policy": r.model,
                            "judge": r.judge,
                            "dimension": r.dimension,
                            "mean": r.mean,
                            "ci_low": r.ci_low,
                            "ci_high": r.ci_high,
                        }
                    )
        mixture = action_mixture(policy_runs, session=session)
    report = ConflictReport(
        simulated=_any_simulated(
            [*oracle_runs, *pipeline_runs, *policy_runs], set(oracle["judge"]), session=session
        ),
        stats=stats,
        curve=tuple(curve),
        lowest_dimension=lowest,
        observability=tuple(_observability(pipe)),
        track_gap=tuple(_track_gap(oracle, pipe)),
        policy_scores=tuple(policy_scores),
        policy_mixture=tuple(mixture),
        usable=tuple(sorted(usable.items())),
        robustness=tuple(
            rb
            for name in oracle_runs
            if (rb := stored_robustness("conflicts", name, session=session)) is not None
        ),
    )
    table = oracle[list(TABLE_COLUMNS)].copy()
    for d in DIMENSIONS:
        table[d] = table[d].map(lambda v: "" if pd.isna(v) else str(int(v)))
    names = {"report_html": "conflicts_report.html", "report_md": "conflicts_report.md"}
    names["scores_csv"] = "conflict_scores.csv"
    # Written into a sibling renamed into place: never a mix of old and new files.
    with staged_report_folder(out_dir) as work:
        write_frame_csv(table, work / names["scores_csv"])
        fig_path = work / "distractor_curve.png"
        if len({c.distractors for c in curve}) > 1:
            _curve_figure(curve, fig_path)
            names["distractor_curve"] = fig_path.name
        figure = fig_path if fig_path.exists() else None
        (work / names["report_html"]).write_text(render_html(report, figure), "utf-8")
        (work / names["report_md"]).write_text(render_markdown(report), "utf-8")
        # The statistics and the report's own tables as data, for the app page and downloads.
        (work / "stats.json").write_text(
            json.dumps(stats.to_dict(), indent=2, allow_nan=False) + "\n", "utf-8"
        )
        sections = [
            {"title": title, "header": header, "rows": rows, "note": note}
            for title, header, rows, note in _sections(report)
        ]
        (work / "report_tables.json").write_text(json.dumps(sections, indent=1) + "\n", "utf-8")
        names["stats_json"] = "stats.json"
        names["tables_json"] = "report_tables.json"
    return replace(report, files={k: str(Path(out_dir) / v) for k, v in names.items()})


# ------------------------------------------------------------------------ rendering


def judged_shares(run_names: Sequence[str], *, session: Session) -> dict[str, Usable]:
    """Per judge: the runs' answers it judged readably, of all their answers."""
    from storage.repo.judges import judge_scores_for
    from storage.repo.runs import list_responses, require_run

    judges: set[str] = set()
    read: dict[str, set[int]] = {}
    answers = 0
    for name in run_names:
        run = require_run(name, session=session)
        assert run.id is not None
        ids = [
            r.id
            for r in list_responses(run.id, session=session)
            if r.parse_status == "ok" and r.id is not None
        ]
        answers += len(ids)
        for sc in judge_scores_for(ids, kind="conflict_d3", session=session):
            judges.add(sc.judge_model)
            if sc.parse_status != "error":
                read.setdefault(sc.judge_model, set()).add(sc.response_id)
    # every answer of the runs was asked about: endpoint failures count as unusable too
    return {j: Usable(len(read.get(j, ())), answers, "answers judged readably") for j in judges}


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


def _sections(report: ConflictReport) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, header, rows, note) of every table, shared by HTML and Markdown."""
    s = report.stats
    out: list[tuple[str, list[str], list[list[str]], str]] = []
    out.append(
        (
            "Rubric scores (mean [95% CI], instance-cluster bootstrap; judges side by side)",
            ["model", "type", "judge", *(DIM_NAMES[d] for d in (*DIMENSIONS, "total"))],
            _score_rows(report),
            "Scores use the full bank (the largest distractor dose). D1/D2 are left out where "
            "the bank kept no observable conflict.",
        )
    )
    out.append(
        (
            "Lowest dimension per model and judge",
            ["model", "judge", "lowest dimension"],
            [[m, j, DIM_NAMES[d]] for (m, j), d in sorted(report.lowest_dimension.items())],
            "D4 lowest for every model and judge: "
            + ("yes" if report.d4_lowest_everywhere else "no"),
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
    for title, header, rows, note in _sections(report):
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
    for title, header, rows, note in _sections(report):
        lines += [f"## {md_escape(title)}", ""]
        if note:
            lines += [md_escape(note), ""]
        lines.append("| " + " | ".join(md_escape(h) for h in header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)
