"""The calibration table of a Label Studio study: each item's judge label and human majority.

``driftlens judges calibration-table STUDY`` reads a study's stored annotations (pulled
from Label Studio by ``annotate pull`` / ``annotate apply``), aggregates them with the
study's own rules (:func:`annotation.apply.study_aggregate`: the 2-of-3 majority, fast and
cancelled annotations dropped) and pairs every item that has a human majority with the
label the judge gave it, read back from the workspace (annotators never saw it). The
table is what ``driftlens judges calibration`` reads (``item``, ``judge``, ``human``
columns), with the full scale to pass as ``--levels`` (and ``--ordinal`` where it is one).

Which judge a study checks, and where its verdicts are stored, is the study kind's own
hook (``StudyKind.calibrate``, :mod:`annotation.judge_pairs`); this module is the one
builder over all of them. Items without a human majority or without a stored judge label
are counted, not guessed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

import pandas as pd
from sqlmodel import Session

from annotation.judge_pairs import CalibrationPairs
from driftlens_core.alt_test import AltTestResult
from storage.errors import InputError


@dataclass(frozen=True)
class HumanTable:
    """Judge vs human majority per item, and what was left out."""

    study: str
    judge: str
    table: pd.DataFrame  # item, judge, human
    levels: tuple[str, ...]
    ordinal: bool
    no_majority: int
    no_judge_label: int
    #: may the judge replace the annotators? (:func:`replacement_test`)
    alt_test: AltTestResult | None = None


def replacement_test(pairs: CalibrationPairs, *, epsilon: float = 0.2) -> AltTestResult:
    """The alternative annotator test of the judge against the study's annotators.

    Items (questions) with two or more kept human votes and a judge label; on an ordinal
    scale a vote or label off its numbers (the rubric's ``n/a``) is left out, and the
    alignment is the distance to the other annotators' mean, else their agreement share.
    ε = 0.2 (skilled annotators, Calderon et al. 2025); BY at q = 0.05.
    """
    from driftlens_core.alt_test import alt_test

    def value(v: str) -> float | str | None:
        if not pairs.ordinal:
            return v
        try:
            return float(v)
        except ValueError:
            return None

    model = {item: x for item, label in pairs.judged if (x := value(label)) is not None}
    humans: dict[str, dict[str, float | str]] = {}
    for item, annotator, label in pairs.votes:
        x = value(label)
        if x is not None and item in model:
            humans.setdefault(item, {})[annotator] = x
    return alt_test(model, humans, nominal=not pairs.ordinal, epsilon=epsilon)


def covered_studies() -> tuple[str, ...]:
    """The study kinds that register a judge-vs-human pairing, in registration order."""
    from annotation.kinds import study_kinds

    return tuple(
        name
        for name, kind in study_kinds().items()
        if kind.calibrate is not None and kind.triage_of is None
    )


def study_pairs(
    study: str,
    *,
    session: Session,
    disposition_study: str | None = None,
    where: Mapping[str, str | Collection[str]] | None = None,
) -> CalibrationPairs:
    """The study kind's pairing of its judge with the human majority (and other judges).

    Args: as :func:`calibration_table`.

    Raises:
        InputError: a study without a judge to pair.
        NotFoundError: no such study in the workspace.
    """
    from annotation.apply import study_aggregate
    from annotation.kinds import get_kind

    kind = get_kind(study)
    if kind.calibrate is None:
        raise InputError(
            f"Study {study!r} has no judge verdict to set beside its human majority; a "
            f"calibration table covers {', '.join(covered_studies())}."
        )
    _study, agg = study_aggregate(study, session=session)
    keep: dict[str, Collection[str]] = {
        k: {v} if isinstance(v, str) else set(v) for k, v in (where or {}).items()
    }
    if disposition_study is not None:
        keep["study"] = {disposition_study}
    if keep:
        items = tuple(
            it for it in agg.items if all(str(it.payload.get(k, "")) in v for k, v in keep.items())
        )
        agg = replace(agg, items=items)
    return kind.calibrate(agg, session)


def calibration_table(
    study: str,
    *,
    session: Session,
    disposition_study: str | None = None,
    where: Mapping[str, str | Collection[str]] | None = None,
) -> HumanTable:
    """The study's calibration table (see the module docstring).

    Args:
        study: the Label Studio study (a registered study kind's name).
        session: the workspace session.
        disposition_study: keep the items of one disposition study only (a
            ``disposition_check`` project may hold several); short for
            ``where={"study": NAME}``.
        where: keep only the items whose task payload has these values (one value, e.g. a
            run's name, or a collection of them).

    Raises:
        InputError: a study without a judge to pair, or one without any item that has both
            a human majority and a judge label.
        NotFoundError: no such study in the workspace.
    """
    pairs = study_pairs(study, session=session, disposition_study=disposition_study, where=where)
    if not pairs.rows:
        raise InputError(
            f"Study {study!r} has no item with both a human majority and a judge label yet "
            f"({pairs.no_majority} without a majority, {pairs.no_judge_label} without a judge "
            "label); collect more annotations and run `driftlens annotate pull`."
        )
    return HumanTable(
        study=study,
        judge=pairs.judge,
        table=pd.DataFrame(list(pairs.rows), columns=["item", "judge", "human"]),
        levels=pairs.levels,
        ordinal=pairs.ordinal,
        no_majority=pairs.no_majority,
        no_judge_label=pairs.no_judge_label,
        alt_test=replacement_test(pairs),
    )
