"""A disposition study's stored answers as a reader reads them: the arm, the probe, the
answer and every classifier's category with its stated reason (``disposition show``).

Everything here but the keys and counts is model output or battery text: whoever shows it
escapes it (the CLI prints it through :class:`app.cli.console.SafeConsole`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, col, select

from storage.disposition_models import DispositionResponse
from storage.errors import InputError, NotFoundError
from storage.repo.disposition import require_arms, scores_for
from study.strict_json import reply_reason


@dataclass(frozen=True)
class Classification:
    """One classifier's verdict on an answer (``repeat`` > 0: a re-classification)."""

    judge: str
    repeat: int
    label: str | None
    parse_status: str
    reason: str


@dataclass(frozen=True)
class ArmAnswer:
    """One stored answer of an arm, with its classifications."""

    arm: str
    battery: str
    stem: str
    paraphrase: int
    sample: int
    probe: str
    answer: str | None
    text: str | None
    status: str
    verdicts: tuple[Classification, ...]


def study_answers(
    study: str,
    *,
    session: Session,
    arm: str | None = None,
    stem: str | None = None,
    limit: int = 10,
) -> tuple[list[ArmAnswer], int]:
    """The first ``limit`` answers of ``study`` (arm, battery, stem, paraphrase, sample
    order), optionally of one arm or one ``battery/stem``, and how many there are.

    Raises:
        NotFoundError: the study has no arms, or no arm ``arm``.
        InputError: ``limit`` below 1, or ``stem`` is not ``battery/stem``.
    """
    if limit < 1:
        raise InputError("--limit must be at least 1.")
    arms = require_arms(study, session=session)
    if arm is not None:
        arms = [a for a in arms if a.name == arm]
        if not arms:
            raise NotFoundError(f"Study {study!r} has no arm {arm!r}.")
    names = {a.id: a.name for a in arms}
    stmt = select(DispositionResponse).where(col(DispositionResponse.arm_id).in_(list(names)))
    if stem is not None:
        battery, sep, stem_id = stem.partition("/")
        if not sep:
            raise InputError(f"A stem is named battery/stem, not {stem!r}.")
        stmt = stmt.where(
            DispositionResponse.battery == battery, DispositionResponse.stem == stem_id
        )
    total = int(session.exec(select(func.count()).select_from(stmt.subquery())).one())
    rows = session.exec(
        stmt.order_by(
            col(DispositionResponse.arm_id), col(DispositionResponse.battery),
            col(DispositionResponse.stem), col(DispositionResponse.paraphrase),
            col(DispositionResponse.sample),
        ).limit(limit)
    ).all()  # fmt: skip
    verdicts: dict[int, list[Classification]] = {}
    scores = scores_for([r.id for r in rows if r.id is not None], session=session)
    for s in sorted(scores, key=lambda s: (s.judge_model, s.repeat)):
        verdicts.setdefault(s.response_id, []).append(
            Classification(s.judge_model, s.repeat, s.label, s.parse_status,
                           reply_reason(s.raw_output))
        )  # fmt: skip
    out = [
        ArmAnswer(
            arm=names[r.arm_id], battery=r.battery, stem=r.stem, paraphrase=r.paraphrase,
            sample=r.sample, probe=r.probe_text, answer=r.answer, text=r.text, status=r.status,
            verdicts=tuple(verdicts.get(r.id or -1, ())),
        )
        for r in rows
    ]  # fmt: skip
    return out, total
