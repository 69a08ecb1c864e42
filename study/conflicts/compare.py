"""Memory conflicts in ``driftlens compare``: rubric total and each dimension per dose.

A conflicts run's score table (:func:`study.conflicts.analysis.stored_table`) has one row
per judged answer and judge. The item is the memory bank instance, the scope the distractor
dose, the unit a judge's score of the k-th sample of that instance and dose (samples of
one instance are exchangeable, so the k-th of run A pairs with the k-th of run B). Scores
are ordinal (0–4 per dimension, the total 0–20): the paired test is the Wilcoxon
signed-rank test of the instances' mean differences, next to the instance-cluster bootstrap
interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from sqlmodel import Session

from storage.analysis_models import JudgeScore
from storage.annotation_models import HumanAnnotation
from storage.errors import InputError
from storage.generation_models import GenerationRun, Response
from study.compare.calibrated import calibrated_rows
from study.compare.measures import MeasureAdapter, paired_rows
from study.compare.registry import register_adapter
from study.compare.types import CompareOptions, Kind, RunData, StatRow
from study.conflicts.actions import rubric_total
from study.conflicts.analysis import DIMENSIONS, stored_table

TOTAL = "total (D1–D5)"
#: The answer text shown per item is cut here.
TEXT_LIMIT = 2000


class ConflictsAdapter(MeasureAdapter):
    """Rubric total and dimensions per distractor dose, paired on instance, sample and judge."""

    name = "conflicts"
    headline = "rubric total (D1–D5) and each dimension per distractor dose"
    # human annotations too: a pulled rubric study calibrates the rows (_calibration_arms)
    revision_tables: tuple[type, ...] = (GenerationRun, Response, JudgeScore, HumanAnnotation)
    default_margin: float | None = None  # each row's own MDD

    def list_runs(self, *, session: Session) -> list[str]:
        """The conflicts runs, newest first."""
        from study.conflicts.cases import conflict_runs

        return [r.name for r in conflict_runs(session=session)]

    def load(self, run: str, *, session: Session, options: CompareOptions) -> RunData:
        """The run's judged answers as a measurement table."""
        from storage.models import ModelSpecRow, Response
        from storage.repo.runs import require_run

        df = stored_table([run], session=session)
        if df.empty:
            raise InputError(f"Conflicts run {run!r} has no judged answer yet; judge it first.")
        df = df.sort_values(["instance_id", "distractors", "judge", "response_id"], kind="stable")
        sample = df.groupby(["instance_id", "distractors", "judge"]).cumcount()
        base = df.assign(
            item=df["instance_id"].astype(str),
            scope=df["distractors"].astype(int).map(lambda d: f"{d} distractors"),
            unit=df["judge"].astype(str) + "#" + sample.astype(str),
        )
        parts = []
        # the total under the rubric's not-applicable rule (an abstention has no D3)
        total = pd.Series(rubric_total(base[list(DIMENSIONS)].to_numpy(float)), index=base.index)
        for stat, values in [(TOTAL, total),
                             *[(d.upper(), base[d]) for d in DIMENSIONS]]:  # fmt: skip
            parts.append(base.assign(statistic=stat, value=values.astype(float)))
        cols = ["item", "unit", "statistic", "scope", "value"]
        measures = pd.concat(parts, ignore_index=True)[cols].dropna(subset=["value"])
        texts: dict[str, str] = {}
        for rid, g in base.groupby("response_id", sort=True):
            resp = session.get(Response, int(rid))
            body = (resp.text or "")[:TEXT_LIMIT] if resp is not None else ""
            # every judge's scores of this answer, so the page shows both judges
            scores = "; ".join(
                f"{r['judge']}: "
                + ", ".join(f"{d.upper()} {r[d]:g}" for d in DIMENSIONS if pd.notna(r[d]))
                for r in g.to_dict("records")
            )
            first = g.iloc[0]
            text = f"[{first['scope']}] {body}\n[scores] {scores}"
            for unit in g["unit"]:
                texts[f"{first['item']}|{first['scope']}|{unit}"] = text
            texts.setdefault(str(first["item"]), text)
        row = require_run(run, session=session)
        spec = session.get(ModelSpecRow, row.model_spec_id)
        kinds: dict[str, Kind] = {s: "ordinal" for s in measures["statistic"].unique()}
        return RunData(
            name=run,
            label=f"{spec.spec if spec else row.model_spec_id} [{run}]",
            simulated=bool(row.simulated or (spec is not None and spec.simulated)),
            measures=measures.reset_index(drop=True),
            kinds=kinds,
            texts=texts,
            extra=_calibration_arms(df, run, session=session),
        )

    def pair(
        self, a: RunData, b: RunData, shared: Sequence[str], *, options: CompareOptions,
        margin: float | None,
    ) -> list[StatRow]:  # fmt: skip
        """The paired rows, and ``B − A`` calibrated to both runs' human slices where pulled."""
        rows = paired_rows(a, b, shared, options=options, margin=margin)
        return rows + calibrated_rows(a, b)


ADAPTER = register_adapter(ConflictsAdapter())


#: How a calibrated row's statistic is named (``D2 calibrated``, ``total calibrated``).
CALIBRATED_SUFFIX = " calibrated"


def _calibration_arms(df: pd.DataFrame, run: str, *, session: Session) -> dict[str, Any]:
    """Per ``(judge, statistic)`` at the run's largest dose: the PPI arm of a pulled slice.

    Empty when no ``conflict_rubric`` slice of this run was pulled, or its tasks store no
    inclusion probabilities (a hand-picked slice: the compare keeps the model-only rows).
    """
    from driftlens_core.ppi import PPIArm
    from study.conflicts.calibrated import human_column, human_slice, inclusion_column

    humans = human_slice([run], session=session)
    if humans is None or not humans.scores:
        return {}
    top = int(df["distractors"].max())
    full = df[df["distractors"] == top].copy()
    full["total"] = rubric_total(full[list(DIMENSIONS)].to_numpy(float))
    arms: dict[str, Any] = {}
    for judge, sub in full.groupby("judge", sort=True):
        for what in (*DIMENSIONS, "total"):
            part = sub[sub[what].notna()]
            h = human_column(part, humans, what)
            p = inclusion_column(part, humans)
            on = ~pd.isna(h)
            if on.sum() < 2 or pd.isna(p[on]).any():
                continue
            stat = (TOTAL if what == "total" else what.upper()) + CALIBRATED_SUFFIX
            arms[f"{judge}|{stat}|{top} distractors"] = PPIArm(
                part[what].to_numpy(float), h, p, part["instance_id"].astype(str).to_numpy()
            )
    return arms
