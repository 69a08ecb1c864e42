"""A Label Studio study's judge calibrated against its human majority, as tables.

:func:`calibrate_study` is the calibration table (:mod:`.human_table`) through the
statistics of ``driftlens judges calibration`` (:func:`.calibration.calibrate_rows`); the
report sections (:mod:`.human_section`) and the pages' calibration panel
(``app/ui/calibration_panel.py``) read it. The ``*_frame`` functions lay the result out
as the panel's tables: agreement with its intervals, per-class TPR / TNR with Wilson
intervals, the confusion matrix (rows human, columns judge).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import pandas as pd
from sqlmodel import Session

from driftlens_core.judge_calibration import JudgeCalibration
from study.judge_robustness.calibration import CalibrationRun, calibrate_rows
from study.judge_robustness.human_table import HumanTable, calibration_table


@dataclass(frozen=True)
class StudyCalibration:
    """The study's calibration table and its statistics."""

    table: HumanTable
    run: CalibrationRun

    @property
    def result(self) -> JudgeCalibration:
        """The statistics (:class:`~driftlens_core.judge_calibration.JudgeCalibration`)."""
        return self.run.result


def calibrate_study(
    study: str,
    *,
    session: Session,
    where: Mapping[str, str | Collection[str]] | None = None,
    bootstrap: int = 2000,
    seed: int = 0,
) -> StudyCalibration:
    """The judge of ``study`` against its human majority.

    Raises:
        InputError: a study without a judge, or without an item with both labels yet.
        NotFoundError: no such study in the workspace.
    """
    got = calibration_table(study, session=session, where=where)
    run = calibrate_rows(
        list(got.table["item"]), list(got.table["judge"]), list(got.table["human"]),
        levels=got.levels, ordinal=got.ordinal, bootstrap=bootstrap, seed=seed,
    )  # fmt: skip
    return StudyCalibration(got, run)


def _ci(value: float | None, ci: tuple[float, float] | None) -> tuple[float | None, ...]:
    return (value, *(ci if ci is not None else (None, None)))


def agreement_frame(r: JudgeCalibration) -> pd.DataFrame:
    """One row per agreement statistic: value, bootstrap interval (percentile)."""
    rows = [("Cohen's kappa", *_ci(r.kappa, r.kappa_ci))]
    if r.weighted_kappa is not None:
        rows.append(("weighted kappa (quadratic)", *_ci(r.weighted_kappa, r.weighted_kappa_ci)))
    rows.append((f"Krippendorff's alpha ({'ordinal' if r.ordinal else 'nominal'})",
                 *_ci(r.alpha, r.alpha_ci)))  # fmt: skip
    if r.bias is not None:
        rows.append(("judge bias (judge - human)", *_ci(r.bias, r.bias_ci)))
    return pd.DataFrame(rows, columns=["statistic", "value", "ci low", "ci high"])


def class_frame(r: JudgeCalibration) -> pd.DataFrame:
    """One row per class: TPR and TNR with their Wilson intervals and counts."""
    return pd.DataFrame(
        [
            {
                "class": str(c.label),
                "TPR": c.tpr,
                "TPR low": c.tpr_ci[0],
                "TPR high": c.tpr_ci[1],
                "humans' positives": c.n_positive,
                "TNR": c.tnr,
                "TNR low": c.tnr_ci[0],
                "TNR high": c.tnr_ci[1],
                "humans' negatives": c.n_negative,
            }
            for c in r.classes
        ]
    )


def confusion_frame(r: JudgeCalibration) -> pd.DataFrame:
    """The confusion matrix: rows the human majority's label, columns the judge's."""
    labels = [str(v) for v in r.levels]
    return pd.DataFrame(
        [list(row) for row in r.confusion],
        index=pd.Index([f"human {v}" for v in labels]),
        columns=[f"judge {v}" for v in labels],
    )
