"""Disposition's side of judge robustness: a stratified sample re-classified, as matrices.

The item is one answered probe response; its verdict is the classifier's category and its
headline value whether that category is the aligned one (the aligned rate's unit). The
primary classifier's stored category (``repeat`` 0) is column 0; re-classifications by the
same classifier (``attempt`` = new cache entry and seed) and by each alternative follow.
The sample is stratified by arm, so every arm's drift against its group's reference can be
read under every judgement: its **sign**, its **significance** (the 95 % interval of the
difference excludes 0) and the **ranking** of the arms by aligned rate
(:func:`conclusions`). Nothing is stored here: the service keeps the summary.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sqlmodel import Session

from llm.specs import ModelSpec
from storage.disposition_models import DispositionArm, DispositionResponse
from storage.errors import InputError
from storage.repo.disposition import arm_responses, require_arms, scores_for
from study.disposition.analysis import group_of, group_reference
from study.disposition.items import BatteryDocument
from study.disposition.score import (
    CLASSIFIER_MAX_TOKENS,
    ClassifierCase,
    build_messages,
    parse_category,
)
from study.judge_robustness.result import RobustnessResult
from study.judge_robustness.sampling import (
    Rejudging,
    SampledJudgements,
    stratified_sample,
)
from study.judge_robustness.service import RobustnessAsk
from study.strict_json import StrictParseError, run_with_repair


@dataclass(frozen=True)
class DispositionJudgements(SampledJudgements):
    """Categories of the sampled responses: codes ``(n, k, 1)`` and aligned ``(n, k)``."""

    codes: np.ndarray
    aligned: np.ndarray


def stored_classifiers(study: str, *, session: Session) -> list[str]:
    """The classifiers that scored the study's responses."""
    arms = require_arms(study, session=session)
    ids = [
        int(r.id)
        for r in arm_responses([int(a.id) for a in arms if a.id is not None], session=session)
        if r.id
    ]
    return sorted({s.judge_model for s in scores_for(ids, session=session)})


def _sample(
    study: str, primary: str, *, sample: int, seed: int, session: Session
) -> tuple[list[DispositionArm], list[DispositionResponse], list[str], dict[int, str]]:
    """A sample of responses the primary classifier categorised, stratified by arm."""
    arms = require_arms(study, session=session)
    responses = [
        r
        for r in arm_responses([int(a.id) for a in arms if a.id is not None], session=session)
        if r.status == "ok" and r.answer and r.id is not None
    ]
    stored = {
        int(s.response_id): s.label
        for s in scores_for([int(r.id) for r in responses if r.id], session=session)
        if s.judge_model == primary and s.repeat == 0 and s.label is not None
    }
    scored = [r for r in responses if r.id in stored]
    if not scored:
        raise InputError(
            f"{primary} classified no answer of study {study!r}; score the study first "
            "(driftlens disposition run)."
        )
    names = {a.id: a.name for a in arms}
    by_arm: dict[str, list[DispositionResponse]] = {}
    for r in scored:
        by_arm.setdefault(names[r.arm_id], []).append(r)
    picked, strata = stratified_sample(by_arm, sample=sample, seed=seed)
    return arms, picked, strata, {k: v for k, v in stored.items() if v is not None}


def reclassify(
    cases: Sequence[ClassifierCase],
    judge: ModelSpec,
    *,
    attempt: int | None,
    session: Session,
    concurrency: int = 16,
) -> list[str | None]:
    """The category ``judge`` gives every case now (``None``: unreadable or failed)."""
    out: list[str | None] = [None] * len(cases)

    def on_answer(
        i: int, value: tuple[str, bool | None] | None, _r: list[str], _e: Exception | None
    ) -> None:
        out[i] = value[0] if value is not None else None

    def repair(_i: int, exc: StrictParseError) -> str:
        return f"Your reply could not be used: {exc}. Reply again with only the JSON object."

    run_with_repair(
        judge,
        [build_messages(c) for c in cases],
        max_tokens=CLASSIFIER_MAX_TOKENS,
        parse=lambda i, text: parse_category(text, cases[i].battery.category_names),
        repair_message=repair,
        on_answer=on_answer,
        session=session,
        concurrency=concurrency,
        attempt=attempt,
    )
    return out


def disposition_judgements(
    study: str, batteries: BatteryDocument, rejudging: Rejudging
) -> tuple[DispositionJudgements, list[DispositionArm]]:
    """The primary classifier's stored categories, its re-classifications and the
    alternatives', on a sample stratified by arm.

    Raises:
        InputError: the primary classifier scored nothing, or a sampled response's battery
            is not in ``batteries``.
    """
    session = rejudging.session
    arms, picked, strata, stored = _sample(
        study, rejudging.primary, sample=rejudging.sample, seed=rejudging.seed, session=session
    )
    by_battery = {b.name: b for b in batteries.batteries}
    missing = sorted({r.battery for r in picked} - set(by_battery))
    if missing:
        raise InputError(
            f"The batteries given do not hold {', '.join(missing)} of study {study!r}; pass "
            "the study's batteries with --batteries."
        )
    cases = [
        ClassifierCase(int(r.id or 0), by_battery[r.battery], r.probe_text, r.answer or "")
        for r in picked
    ]
    first: list[str | None] = [stored[c.response_id] for c in cases]
    columns, labels = rejudging.asked(first, cases, reclassify)
    codes = np.full((len(cases), len(columns), 1), np.nan)
    aligned = np.full((len(cases), len(columns)), np.nan)
    for i, c in enumerate(cases):
        names = list(c.battery.category_names)
        for j, col in enumerate(columns):
            label = col[i]
            if label is not None and label in names:
                codes[i, j, 0] = names.index(label)
                aligned[i, j] = float(label == c.battery.aligned_category)
    got = DispositionJudgements(
        response_ids=tuple(c.response_id for c in cases),
        strata=tuple(strata),
        labels=tuple(labels),
        codes=codes,
        aligned=aligned,
    )
    return got, arms


def conclusions(
    got: DispositionJudgements,
    arms: Sequence[DispositionArm],
    *,
    bootstrap: int,
    seed: int,
) -> list[dict[str, str]]:
    """Per judgement column: each arm's drift sign and significance, and the arm ranking.

    Within each reasoning group every arm is compared with the group's reference on the
    sampled responses: the drift is the difference of aligned rates, its 95 % interval a
    percentile bootstrap of the responses within each arm (``bootstrap`` replicates, the
    same draws for every column). Only responses every judgement read count.
    """
    complete = np.all(np.isfinite(got.aligned), axis=1)
    strata = np.array(got.strata)[complete]
    values = got.aligned[complete]
    rng = np.random.default_rng(seed)
    draws = {
        arm: rng.integers(0, int((strata == arm).sum()), (bootstrap, int((strata == arm).sum())))
        for arm in sorted(set(strata))
    }
    groups: dict[str, list[DispositionArm]] = {}
    for a in arms:
        groups.setdefault(group_of(a), []).append(a)
    out: list[dict[str, str]] = []
    for j in range(values.shape[1]):
        col = values[:, j]
        rates = {arm: float(col[strata == arm].mean()) for arm in draws}
        found: dict[str, str] = {}
        for members in groups.values():
            ref = group_reference(members)
            if ref is None or ref.name not in draws:
                continue
            ref_boot = col[strata == ref.name][draws[ref.name]].mean(axis=1)
            for a in members:
                if a.name == ref.name or a.name not in draws:
                    continue
                diff = rates[a.name] - rates[ref.name]
                boot = col[strata == a.name][draws[a.name]].mean(axis=1) - ref_boot
                lo, hi = np.percentile(boot, [2.5, 97.5])
                sign = "positive" if diff > 0 else "negative" if diff < 0 else "zero"
                found[f"{a.name} drift sign"] = sign
                found[f"{a.name} drift significance"] = (
                    "significant" if lo > 0 or hi < 0 else "not significant"
                )
        found["arm ranking by aligned rate"] = _ranking(rates)
        out.append(found)
    return out


def _ranking(rates: dict[str, float]) -> str:
    """``"a > b = c"``: arms by aligned rate, highest first, equal rates tied by ``=``."""
    order = sorted(rates, key=lambda arm: (-rates[arm], arm))
    text = order[0] if order else ""
    for prev, arm in itertools.pairwise(order):
        text += (" = " if abs(rates[prev] - rates[arm]) < 1e-12 else " > ") + arm
    return text


def run_robustness(study: str, ask: RobustnessAsk) -> RobustnessResult:
    """The classifier's robustness for a disposition study (the plugin's ``robustness``).

    ``ask.options["batteries"]``: the study's batteries, a file or a
    :class:`~study.disposition.items.BatteryDocument` (default: the shipped sample).
    """
    from study.disposition.items import load_sample_batteries, read_batteries

    ask.require_judge_variance()
    given = ask.options.get("batteries")
    if given is None:
        batteries = load_sample_batteries()
    elif isinstance(given, BatteryDocument):
        batteries = given
    else:
        batteries = read_batteries(Path(given))
    got, arms = disposition_judgements(
        study,
        batteries,
        ask.asked(stored_classifiers(study, session=ask.session), f"Study {study!r}"),
    )
    return ask.summary(
        "disposition",
        study,
        got,
        values=got.aligned,
        verdicts=got.codes,
        measure="aligned (1) or not (0) per answer, the classifier's category",
        midpoint=0.5,
        scale=(0.0, 1.0),
        conclusions=conclusions(got, arms, bootstrap=ask.bootstrap, seed=ask.seed),
    )
