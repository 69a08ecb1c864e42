"""Disposition drift in ``driftlens compare``: the aligned rate per tendency of two arms.

An arm (a run of the disposition instrument) is named ``ARM`` with ``--study S``, or
``S:ARM``. Its measurement table has one row per answered probe and sample: the item is
the stem of a battery (the tendency), the unit the paraphrase and sample, the value 1
when the classifier's first scoring put the answer in the aligned category. Exhausted or
failed answers have no value and are left out of both runs' rates (counted as unpaired).
The paired test is exact McNemar on the answers both arms gave to the same probe and
sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session

from llm.specs import spec_simulated
from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore
from storage.errors import InputError, NotFoundError
from study.compare.calibrated import calibrated_rows
from study.compare.measures import MeasureAdapter, paired_rows
from study.compare.registry import register_adapter
from study.compare.types import CompareOptions, RunData, StatRow
from study.disposition.analysis import DEFAULT_BOUND_PP, stored_rate_table

STATISTIC = "aligned rate"
#: The text shown for an item is cut here (the page opens the whole answer).
TEXT_LIMIT = 2000


def resolve_arm(name: str, *, study: str | None, session: Session) -> tuple[str, str]:
    """``(study, arm)`` of a run name (``ARM`` with a study, or ``STUDY:ARM``).

    Raises:
        InputError: no study given and the arm name is ambiguous.
        NotFoundError: the arm does not exist.
    """
    from storage.repo.disposition import get_arm, list_arms

    if study is None and ":" in name:
        study, name = name.split(":", 1)
    if study is None:
        studies = sorted({a.study for a in list_arms(session=session) if a.name == name})
        if len(studies) > 1:
            raise InputError(
                f"Arm {name!r} exists in studies {', '.join(studies)}; name one with "
                f"--study or as STUDY:{name}."
            )
        if not studies:
            raise NotFoundError(f"No disposition arm named {name!r}.")
        study = studies[0]
    if get_arm(study, name, session=session) is None:
        raise NotFoundError(f"No disposition arm {name!r} in study {study!r}.")
    return study, name


class DispositionAdapter(MeasureAdapter):
    """Aligned rate per tendency (battery), paired on stem, paraphrase and sample."""

    name = "disposition"
    headline = "aligned rate per tendency (share of answers in the aligned category)"
    revision_tables: tuple[type, ...] = (DispositionArm, DispositionResponse, DispositionScore)
    default_margin: float | None = DEFAULT_BOUND_PP / 100.0

    def list_runs(self, *, session: Session) -> list[str]:
        """Every arm as ``STUDY:ARM``."""
        from storage.repo.disposition import list_arms

        return [f"{a.study}:{a.name}" for a in list_arms(session=session)]

    def load(self, run: str, *, session: Session, options: CompareOptions) -> RunData:
        """The arm's answers as a measurement table (first scoring only)."""
        from storage.repo.disposition import arm_responses, get_arm

        study, arm_name = resolve_arm(run, study=options.study, session=session)
        arm = get_arm(study, arm_name, session=session)
        assert arm is not None and arm.id is not None
        table, _ = stored_rate_table([arm], session=session)
        first = table[(table["classifier_repeat"] == 0) & (table["aligned"] != "")]
        measures = first.assign(
            item=first["battery"] + "/" + first["stem"],
            unit=first["probe"] + "/s" + first["sample"].astype(str),
            statistic=STATISTIC,
            scope=first["battery"],
            value=first["aligned"].astype(float),
        )[["item", "unit", "statistic", "scope", "value"]]
        texts: dict[str, str] = {}
        value = {(i, u): v for i, u, v in zip(measures["item"], measures["unit"],
                                               measures["value"], strict=True)}  # fmt: skip
        for r in arm_responses([arm.id], session=session):
            item, unit = f"{r.battery}/{r.stem}", f"p{r.paraphrase}/s{r.sample}"
            v = value.get((item, unit))
            mark = "aligned" if v == 1 else ("not aligned" if v == 0 else "no answer")
            body = (r.answer or r.text or "")[:TEXT_LIMIT]
            # per answer (the unit that differs most is shown) and the item's first answer
            texts[f"{item}|{unit}"] = f"[p{r.paraphrase} sample {r.sample}: {mark}] {body}"
            texts.setdefault(item, texts[f"{item}|{unit}"])
        if measures.empty:
            raise InputError(f"Arm {arm_name!r} of study {study!r} has no scored answer yet.")
        return RunData(
            name=run,
            label=f"{arm_name} ({arm.model})",
            simulated=spec_simulated(arm.model),
            measures=measures.reset_index(drop=True),
            kinds={STATISTIC: "binary"},
            texts=texts,
            extra=_calibration_arms(study, first, session=session),
        )

    def pair(
        self, a: RunData, b: RunData, shared: Sequence[str], *, options: CompareOptions,
        margin: float | None,
    ) -> list[StatRow]:  # fmt: skip
        """The paired rows, and ``B − A`` calibrated to the pulled ``disposition_check``."""
        rows = paired_rows(a, b, shared, options=options, margin=margin)
        return rows + calibrated_rows(a, b, kind="binary")


def _calibration_arms(study: str, first: pd.DataFrame, *, session: Session) -> dict[str, Any]:
    """Per battery: the PPI arm of the arm's answers with their pulled human categories.

    Empty when no ``disposition_check`` of the study was pulled or the slice stores no
    inclusion probabilities (the compare keeps the model-only rows). Clustered by stem, so
    the two arms' answers to one stem pair up.
    """
    from driftlens_core.ppi import PPIArm
    from study.disposition.calibrated import human_slice, slice_arm

    humans = human_slice(study, session=session)
    if humans is None or not humans.aligned:
        return {}
    typed = first.assign(aligned=first["aligned"].astype(float), sample=first["sample"].astype(int))
    arms: dict[str, Any] = {}
    for battery, part in typed.groupby("battery", sort=True):
        a = slice_arm(study, part, humans)
        on = np.isfinite(a.h)
        if on.sum() < 2 or np.isnan(a.p[on]).any():
            continue
        arms[f"classifier|{STATISTIC} calibrated|{battery}"] = PPIArm(a.f, a.h, a.p, a.stem)
    return arms


ADAPTER = register_adapter(DispositionAdapter())
