"""Reasoning drift in ``driftlens compare``: d_rel per condition class and per condition.

Runs are compared under one labeler and one ontology version. Each run's drift table (every
response against its own baseline, :func:`study.reasoning.trajectories.drift_table_by_run`)
is reduced to per-question sufficient statistics on the questions both runs share, and
``d_rel(B) − d_rel(A)`` is bootstrapped over questions with one draw for both runs
(:func:`driftlens_core.paired.paired_drel_difference`): each run's noise floor is
re-estimated on the draw, so the difference carries both floors' uncertainty. Rows come per
condition class (the class's conditions pooled; the noise class is the floor itself) and per
condition, for both metrics. The paired test next to the interval is the Wilcoxon
signed-rank test of the questions' ``(condition mean − noise mean)`` differences between
the runs.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session, select

from driftlens_core.bootstrap import QuestionSums, question_sums
from driftlens_core.paired import paired_drel_difference, sign_test, wilcoxon_paired
from storage.errors import InputError
from storage.generation_models import GenerationRun, Response
from storage.ontology_models import StepLabel
from study.compare.measures import item_diffs, stat_row, unpaired_units
from study.compare.registry import register_adapter
from study.compare.types import CompareOptions, ItemDiff, RunData, StatRow
from study.reasoning.config import SRI_ALPHA
from study.reasoning.drift_files import METRICS, stats_frame

#: Steps shown per response in the side-by-side text.
STEP_LIMIT = 40


@dataclass(frozen=True)
class _Extra:
    """What the reasoning pairing needs beyond the measurement table."""

    drift: pd.DataFrame  # drift.csv rows of the run
    texts_for: Callable[[str, str, int], str]  # (question, perturbation key, sample) → text
    #: the pairs' drift from a pulled label_check question slice (None: none pulled)
    human: pd.DataFrame | None = None
    #: ``"JUDGE|criterion"`` -> the response judge's PPI arm of a pulled helpfulness,
    #: distraction or acknowledgement slice (empty: none pulled)
    judge_arms: dict[str, Any] = field(default_factory=dict)


def _texts_reader(
    run_id: int, labeler_id: int, version_id: int, *, session: Session
) -> Callable[[str, str, int], str]:
    """A reader of one response's steps with their leaves (``1. [leaf] step``)."""
    from storage.models import Question, Response
    from storage.repo.labels import step_labels_for

    def read(question_id: str, condition: str, sample: int) -> str:
        q = session.exec(select(Question).where(Question.external_id == question_id)).first()
        if q is None:
            return ""
        r = session.exec(
            select(Response)
            .where(Response.run_id == run_id, Response.question_id == q.id)
            .where(Response.condition == condition, Response.sample == sample)
        ).first()
        if r is None or r.id is None:
            return ""
        labels = step_labels_for(
            [r.id], labeler_id=labeler_id, ontology_version_id=version_id, session=session
        ).get(r.id, [])
        leaf = {lab.step_index: lab.symbol for lab in labels}
        steps = list(r.steps or [])[:STEP_LIMIT]
        lines = [f"{i + 1}. [{leaf.get(i, 'unmapped')}] {s}" for i, s in enumerate(steps)]
        head = f"[{condition} sample {sample}]"
        return "\n".join([head, *lines]) if lines else f"{head} {r.text or ''}"

    return read


def _sums(
    drift: pd.DataFrame, questions: Sequence[str], conditions: Sequence[str], noise: np.ndarray
) -> QuestionSums:
    """Per-question sums of one run on a common question and condition order."""
    q_index = {q: i for i, q in enumerate(questions)}
    c_index = {c: i for i, c in enumerate(conditions)}
    d = drift[drift["question_id"].astype(str).isin(q_index)]
    q = d["question_id"].astype(str).map(q_index).to_numpy(dtype=np.int64)
    c = d["condition"].astype(str).map(c_index).to_numpy(dtype=np.int64)
    x = d[list(METRICS)].to_numpy(dtype=np.float64)
    return question_sums(q, c, x, noise, n_questions=len(questions))


def _question_deltas(
    drift: pd.DataFrame, questions: Sequence[str], condition: str, metric: str, noise: set[str]
) -> pd.Series:
    """Per question: mean of the condition's rows minus mean of the noise rows."""
    d = drift[drift["question_id"].astype(str).isin(set(questions))]
    by_q = d.assign(question_id=d["question_id"].astype(str))
    cond = by_q[by_q["condition"].astype(str) == condition].groupby("question_id")[metric].mean()
    floor = by_q[by_q["condition"].astype(str).isin(noise)].groupby("question_id")[metric].mean()
    return (cond - floor).dropna()


def used_labelers(*, session: Session) -> list[str]:
    """Labeler specs this workspace has labeled with (the Compare page's choices)."""
    from storage.models import LabelerSpec

    return sorted({s.name for s in session.exec(select(LabelerSpec)).all() if s.name})


class ReasoningAdapter:
    """d_rel per condition class and condition of runs labeled by one labeler."""

    name = "reasoning"
    headline = "d_rel per condition class and per condition (drift above the noise floor, in SDs)"
    revision_tables: tuple[type, ...] = (GenerationRun, Response, StepLabel)
    default_margin: float | None = None  # each row's own MDD

    def labelers(self, *, session: Session) -> list[str] | None:
        """The labelers that have labelled a run (the simulator-free default when none)."""
        return used_labelers(session=session) or ["keywords"]

    def list_runs(self, *, session: Session) -> list[str]:
        """Generation runs of the reasoning instrument (not the memory-conflict ones)."""
        from storage.repo.runs import list_runs

        return [r.name for r in list_runs(session=session)
                if (r.config or {}).get("instrument") in (None, "reasoning")]  # fmt: skip

    def load(self, run: str, *, session: Session, options: CompareOptions) -> RunData:
        """The run's drift table under ``options.labeler`` (and the ontology version)."""
        from ontology.labelers.registry import ensure_labeler_spec
        from ontology.versions import get_version
        from storage.models import ModelSpecRow
        from storage.repo.runs import require_run
        from study.reasoning.trajectories import drift_table_by_run

        if not options.labeler:
            raise InputError("Reasoning drift runs are compared under one labeler: pass --labeler.")
        row = require_run(run, session=session)
        version = get_version(options.ontology_version, session=session)
        spec = session.get(ModelSpecRow, row.model_spec_id)
        label = f"{spec.spec if spec else row.model_spec_id} [{run}]"
        table = drift_table_by_run(
            {label: row}, options.labeler, session=session, version=version, alpha=SRI_ALPHA
        )
        if table.rows.empty:
            reasons = ", ".join(f"{k}: {v}" for k, v in sorted(table.skipped.items()))
            raise InputError(
                f"Run {run!r} has no comparable responses under labeler {options.labeler!r} "
                f"({reasons or 'no responses'}); label it first: "
                + shlex.join(["driftlens", "label", "--run", run, "--labeler", options.labeler])
            )
        drift = stats_frame(table.rows)
        labeler = ensure_labeler_spec(options.labeler, session=session)
        assert row.id is not None and labeler.id is not None and version.id is not None
        measures = pd.DataFrame(
            {
                "item": drift["question_id"].astype(str),
                "unit": drift["variant"].astype(str) + "#" + drift["sample"].astype(str),
                "statistic": "drift (sri)",
                "scope": drift["condition"].astype(str),
                "value": drift["sri"].astype(float),
            }
        )
        simulated = bool(row.simulated or (spec is not None and spec.simulated))
        return RunData(
            name=run,
            label=label,
            simulated=simulated,
            measures=measures,
            kinds={"drift (sri)": "ordinal"},
            extra=_Extra(
                drift,
                _texts_reader(row.id, labeler.id, version.id, session=session),
                _human_drift(drift, run, label, version, session=session),
                _judge_arms(run, session=session),
            ),
        )

    def pair(
        self,
        a: RunData,
        b: RunData,
        shared: Sequence[str],
        *,
        options: CompareOptions,
        margin: float | None,
    ) -> list[StatRow]:
        """d_rel differences per condition class, then per condition, for both metrics."""
        da: pd.DataFrame = a.extra.drift
        db: pd.DataFrame = b.extra.drift
        klass = (
            pd.concat([da, db])[["condition", "condition_class"]]
            .astype(str)
            .drop_duplicates("condition")
            .set_index("condition")["condition_class"]
        )
        noise_conditions = {c for c, k in klass.items() if k == "noise"}
        if not noise_conditions:
            raise InputError("Neither run has noise conditions; d_rel needs the noise floor.")
        rows: list[StatRow] = []
        rng = np.random.default_rng(options.seed)
        questions = list(shared)
        for level in ("class", "condition"):
            if level == "class":
                # a class pools its conditions; noise conditions stay apart to form the floor
                def to_unit(frame: pd.DataFrame) -> pd.DataFrame:
                    cond = frame["condition"].astype(str)
                    merged = np.where(cond.isin(noise_conditions), cond,
                                      "class " + frame["condition_class"].astype(str))  # fmt: skip
                    return frame.assign(condition=merged)

                fa, fb = to_unit(da), to_unit(db)
            else:
                fa, fb = da, db
            units = sorted(set(fa["condition"].astype(str)) | set(fb["condition"].astype(str)))
            noise = np.array([u in noise_conditions for u in units])
            res = paired_drel_difference(
                _sums(fa, questions, units, noise), _sums(fb, questions, units, noise),
                n_boot=options.n_boot, seed=rng, alpha=options.alpha,
                margin="mdd" if margin is None else margin,
            )  # fmt: skip
            for ci, unit in enumerate(units):
                if level == "class" and (unit in noise_conditions or unit == "class none"):
                    # the floor against itself is 0 by construction, and class none is the
                    # baseline condition alone (its row comes with the conditions)
                    continue
                for mi, metric in enumerate(METRICS):
                    j = ci * len(METRICS) + mi
                    d = _question_deltas(fb, questions, unit, metric, noise_conditions).sub(
                        _question_deltas(fa, questions, unit, metric, noise_conditions)
                    ).dropna()  # fmt: skip
                    w, s = wilcoxon_paired(d.to_numpy()), sign_test(d.to_numpy())
                    rows.append(
                        stat_row(
                            a,
                            b,
                            f"d_rel ({metric})",
                            unit,
                            "ordinal",
                            res,
                            j,
                            test="Wilcoxon signed-rank",
                            p_test=w.p_value,
                            detail=f"{w.n_nonzero} questions differ; sign test p {s.p_value:.3g}",
                        )
                    )
        return rows + calibrated_rows(a, b)

    def items(self, a: RunData, b: RunData, shared: Sequence[str], *, top: int) -> list[ItemDiff]:
        """Questions whose drift differs most, each with both runs' most different answer."""
        out = []
        for it in item_diffs(a, b, shared, top=top):
            unit = it.detail.split(", ", 1)[1].split(")", 1)[0] if ", " in it.detail else ""
            key, _, sample = unit.rpartition("#")
            if key and sample.isdigit():
                ta = a.extra.texts_for(it.item, key, int(sample))
                tb = b.extra.texts_for(it.item, key, int(sample))
                it = ItemDiff(it.run_a, it.run_b, it.item, it.score, it.detail, ta, tb)
            out.append(it)
        return out

    def unpaired_units(self, a: RunData, b: RunData, shared: Sequence[str]) -> int:
        """Compared responses of shared questions that the other run lacks."""
        return unpaired_units(a, b, shared)


ADAPTER = register_adapter(ReasoningAdapter())


#: How a calibrated row's statistic is named (``mean drift (dtw) calibrated``).
CALIBRATED_STATISTIC = "mean drift ({metric}) calibrated"


def _human_drift(
    drift: pd.DataFrame, run: str, label: str, version: Any, *, session: Session
) -> pd.DataFrame | None:
    """The run's pairs' drift from a pulled ``label_check`` question slice, if any."""
    from ontology.versions import document
    from study.reasoning.calibrated import human_drift_rows, human_step_labels

    labels = human_step_labels({run: label}, f"{version.name}@{version.version}", session=session)
    if labels is None or labels.steps.empty:
        return None
    human = human_drift_rows(drift, labels.steps, document(version).symbol_of, alpha=SRI_ALPHA)
    return None if human.rows.empty else human.rows


def calibrated_rows(a: RunData, b: RunData) -> list[StatRow]:
    """``B − A`` of each condition's mean drift calibrated to both runs' human slices.

    Each run's value is the report's own calibrated mean drift of the condition (the
    question jackknife of :func:`study.reasoning.calibrated.calibrate_drift`) and the
    difference its paired jackknife (:func:`study.compare.calibrated.calibrated_row`: one
    code path), clustered by question so questions both runs share pair up. Left out (the
    d_rel rows stay the headline) where either run's headline would be model-only (fewer
    than :data:`~driftlens_core.ppi.MIN_HUMAN_LABELS` human-labelled questions in the
    condition) or its slice stores no question inclusion probabilities.
    """
    from study.compare.calibrated import calibrated_row
    from study.reasoning.calibrated import enough_humans, joined_table, slice_arm

    ea, eb = a.extra, b.extra
    if not isinstance(ea, _Extra) or not isinstance(eb, _Extra):
        return []
    judged = _judge_rate_rows(a, b, ea, eb)
    if ea.human is None or eb.human is None:
        return judged
    ja, jb = joined_table(ea.drift, ea.human), joined_table(eb.drift, eb.human)
    out: list[StatRow] = []
    for condition in sorted(set(ja["condition"]) & set(jb["condition"])):
        for metric in METRICS:
            arms = []
            for j in (ja, jb):
                part = j[j["condition"] == condition]
                part = part[np.isfinite(part[metric].to_numpy(dtype=float))]
                h = part[f"h_{metric}"].to_numpy(dtype=float)
                p = part["inclusion_probability"].to_numpy(dtype=float)
                on = np.isfinite(h)
                if len(part) < 2 or int(on.sum()) < 2 or not np.all((p[on] > 0) & (p[on] <= 1)):
                    break
                arms.append(slice_arm(part, metric))
            if len(arms) < 2:
                continue
            row = calibrated_row(
                a, b, statistic=CALIBRATED_STATISTIC.format(metric=metric), scope=condition,
                arm_a=arms[0], arm_b=arms[1], enough=enough_humans,
                by_question=True,
            )  # fmt: skip
            if row is not None:
                out.append(row)
    return out + judged


#: How a calibrated judge-rate row's statistic is named (``helpfulness calibrated (JUDGE)``).
JUDGE_RATE_STATISTIC = "{what} calibrated ({judge})"


def _judge_arms(run: str, *, session: Session) -> dict[str, Any]:
    """Every judge's arms of the run's pulled helpfulness / distraction / acknowledgement."""
    from storage.repo.judges import run_judges
    from study.reasoning.calibrated_judges import judge_rate_arms

    return {
        f"{judge}|{what}": arm
        for judge in run_judges(run, session=session)
        for what, arm in judge_rate_arms(run, judge, session=session).items()
    }


def _judge_rate_rows(a: RunData, b: RunData, ea: _Extra, eb: _Extra) -> list[StatRow]:
    """``B − A`` of the response judge's rates calibrated to both runs' pulled studies.

    Each run's value is the judge's calibrated headline of ``driftlens judge`` (the same
    arm and estimator, :func:`study.compare.calibrated.calibrated_row`); left out where
    either run's headline would be the judge's own.
    """
    from study.compare.calibrated import calibrated_row
    from study.reasoning.judges import HELPFULNESS

    out = []
    for key in sorted(set(ea.judge_arms) & set(eb.judge_arms)):
        judge, what = key.split("|")
        row = calibrated_row(
            a, b, statistic=JUDGE_RATE_STATISTIC.format(what=what, judge=judge),
            scope="responses", arm_a=ea.judge_arms[key], arm_b=eb.judge_arms[key],
            kind="ordinal" if what == HELPFULNESS else "binary",
        )  # fmt: skip
        if row is not None:
            out.append(row)
    return out
