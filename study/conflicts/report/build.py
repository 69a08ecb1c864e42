"""The memory-conflict report: score table with CIs, D6 flags, distractor curve, agreement.

Written as HTML and Markdown (every stored or model-written text escaped) plus the plain
score table (``conflict_scores.csv``) that ``driftlens conflicts stats`` reads, so every
number can be recomputed from the CSV. Judges are always reported side by side; no table
averages them into one score.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session

from driftlens_core.proportions import proportion_interval
from driftlens_core.rubric import cluster_mean
from llm.roles import GENERATION, role_lines
from llm.specs import spec_simulated
from study.assessable import Usable
from study.conflicts.abstention import ACTION_COLUMN, abstention_rows
from study.conflicts.actions import rubric_total
from study.conflicts.analysis import (
    ALL,
    DIMENSIONS,
    TABLE_COLUMNS,
    analyze_scores,
    stored_table,
)
from study.conflicts.baseline import baseline_rows
from study.conflicts.calibrated import calibrated_scores
from study.conflicts.report.abstention import headline_lines
from study.conflicts.report.document import (
    ConflictReport,
    CurvePoint,
    render_html,
    render_markdown,
    report_sections,
)
from study.conflicts.score import settings_by_judge
from study.judge_robustness.human_section import calibration_section_lines
from study.judge_robustness.result import stored_robustness
from study.judge_settings import (
    SettingsByJudge,
    collect_settings,
    refuse_mixed_settings,
    settings_lines,
)
from study.report.folder import staged_report_folder
from study.safe_csv import write_frame_csv


def _curve(df: pd.DataFrame, *, bootstrap: int, seed: int) -> list[CurvePoint]:
    rng = np.random.default_rng(seed)
    total = rubric_total(df[list(DIMENSIONS)].to_numpy(dtype=float))
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


def _any_simulated(runs: Sequence[str], judges: set[str], *, session: Session) -> bool:
    """Whether a run was answered, or a judge is, by the in-process simulator."""
    from storage.repo.runs import get_run

    if any(spec_simulated(str(j)) for j in judges):
        return True
    return any(bool(r.simulated) for name in runs if (r := get_run(name, session=session)))


def build_report(
    oracle_runs: Sequence[str],
    *,
    session: Session,
    out_dir: Path,
    pipeline_runs: Sequence[str] = (),
    policy_runs: Sequence[str] = (),
    baseline_runs: Sequence[str] = (),
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
    empty = stored_table(baseline_runs, session=session) if baseline_runs else oracle.iloc[:0]
    baseline = baseline_rows(oracle, empty, bootstrap=bootstrap, seed=seed)
    columns = [*TABLE_COLUMNS, ACTION_COLUMN]
    stats = analyze_scores(oracle[columns], bootstrap=bootstrap, seed=seed)
    by_judge = _settings_of(oracle_runs, session=session)
    refuse_mixed_settings(by_judge, what=f"run(s) {', '.join(oracle_runs)}")
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
    arms = list(stats.abstention)
    if not empty.empty:
        arms += abstention_rows(empty.assign(model=empty["model"] + " [no memory]"))
    if policy_runs:
        from study.conflicts.policy import action_mixture

        pol = stored_table(policy_runs, session=session)
        if not pol.empty:
            pstats = analyze_scores(pol[columns], bootstrap=bootstrap, seed=seed)
            arms += [r for r in pstats.abstention if r.type == ALL]
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
        baseline=tuple(baseline),
        headline=tuple(
            headline_lines(
                [
                    (m, j, row)
                    for m in sorted(set(oracle["model"]))
                    for j in sorted(set(oracle["judge"]))
                    if (row := stats.score(m, j, ALL, "total")) is not None
                ],
                stats.abstention,
                baseline,
                withheld=frozenset(withheld),
            )
        ),
        abstention=tuple(arms),
        judge_settings=tuple((j, t) for j, t in settings_lines(by_judge)),
        robustness=tuple(
            rb
            for name in oracle_runs
            if (rb := stored_robustness("conflicts", name, session=session)) is not None
        ),
        calibrated=calibrated_scores(oracle_runs, session=session, bootstrap=bootstrap, seed=seed),
        roles=tuple(
            role_lines(
                GENERATION,
                [*oracle_runs, *pipeline_runs, *policy_runs, *baseline_runs],
                session=session,
            )
        ),
        unscored=tuple(
            unscored_counts(
                [*oracle_runs, *pipeline_runs, *policy_runs, *baseline_runs], session=session
            )
        ),
        calibration=calibration_section_lines(
            "conflict_rubric",
            session=session,
            judge_noun="rubric judge",
            push_hint="driftlens annotate push conflict_rubric --select run=RUN, then annotate "
            "pull",
            where={"run": set(oracle_runs)},
            bootstrap=bootstrap,
            seed=seed,
        ),
    )
    table = oracle[columns].copy()
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
            json.dumps(_stats_payload(report), indent=2, allow_nan=False) + "\n", "utf-8"
        )
        sections = [
            {"title": title, "header": header, "rows": rows, "note": note}
            for title, header, rows, note in report_sections(report)
        ]
        (work / "report_tables.json").write_text(json.dumps(sections, indent=1) + "\n", "utf-8")
        names["stats_json"] = "stats.json"
        names["tables_json"] = "report_tables.json"
    return replace(report, files={k: str(Path(out_dir) / v) for k, v in names.items()})


def _stats_payload(report: ConflictReport) -> dict[str, Any]:
    """``stats.json``: the statistics, and the calibrated headlines where a slice was pulled."""
    out = report.stats.to_dict()
    if report.calibrated is not None:
        out["calibrated"] = report.calibrated.to_dict()
    return out


def _settings_of(run_names: Sequence[str], *, session: Session) -> SettingsByJudge:
    from storage.repo.runs import list_responses, require_run

    merged: SettingsByJudge = {}
    for name in run_names:
        run = require_run(name, session=session)
        assert run.id is not None
        responses = list_responses(run.id, session=session)
        for j, seen in settings_by_judge(responses, session=session).items():
            collect_settings(((j, x) for x in seen), into=merged)
    return merged


def unscored_counts(run_names: Sequence[str], *, session: Session) -> list[tuple[str, int, int]]:
    """Per judge: ``(judge, unscored, verdicts)`` over the runs' answers.

    A verdict is unscored when its reply did not parse after the fallback (stored with
    ``parse_status = "error"``, every value empty); :func:`study.conflicts.score.stored_verdicts`
    leaves those out of every estimate.
    """
    from storage.repo.judges import judge_scores_for
    from storage.repo.runs import list_responses, require_run

    counts: dict[str, list[int]] = {}
    for name in run_names:
        run = require_run(name, session=session)
        assert run.id is not None
        ids = [r.id for r in list_responses(run.id, session=session) if r.id is not None]
        for sc in judge_scores_for(ids, kind="conflict_d3", session=session):
            c = counts.setdefault(sc.judge_model, [0, 0])
            c[0] += int(sc.parse_status == "error")
            c[1] += 1
    return [(j, n, total) for j, (n, total) in sorted(counts.items())]


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
