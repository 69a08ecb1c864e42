"""Reasoning drift's side of judge robustness: the step labeler relabels a sample.

The item is one drift pair (a response against its question's baseline, sample 0); the
sample is stratified by condition class (``none``: the baseline-vs-baseline pairs of the
noise floor), every class getting at least ``min_per_class`` pairs (all it has when fewer;
the result then notes it), so the noise floor is not read off one or two pairs. The
sampled responses and their questions' baselines are relabeled ``resamples - 1`` more
times by the same LLM labeler (new seeds and repeat indices, their own cache entries) and
once by every alternative labeler; column 0 is the stored labels. Under each labeling
every pair's SRI drift is recomputed (:func:`driftlens_core.pair_drift`, as the analysis
does), and the headline, the class-mean drift minus the noise floor, is read with the
two-stage bootstrap of :mod:`study.reasoning.relabel_bootstrap`. The flip rate is the
share of steps whose label differs from the stored one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from sqlmodel import Session, col, select

from driftlens_core import pair_drift
from driftlens_core.judge_noise import flip_rate
from ontology.labelers.base import LabelItem, label_items
from ontology.labelers.registry import ensure_labeler_spec, make_labeler, parse_labeler_spec
from ontology.schema import OntologyDoc
from ontology.versions import document, get_version
from storage.errors import InputError
from storage.models import BASELINE_CONDITION, Response, StepLabel
from storage.repo.runs import require_run
from storage.step_spans import unpack_steps
from study.judge_robustness.result import JudgeLine, RobustnessResult
from study.judge_robustness.sampling import judgement_columns, stratified_sample
from study.judge_robustness.service import RobustnessAsk
from study.reasoning.config import SRI_ALPHA
from study.reasoning.relabel_bootstrap import HeadlineInterval, relabel_bootstrap
from study.reasoning.trajectories import keyed_responses

NULL = "none"
MIN_PER_CLASS = 5
MEASURE = "SRI drift of a pair minus the noise floor (mean baseline-vs-baseline SRI)"
_LLM_KINDS = ("llm", "sim")


@dataclass(frozen=True)
class _Response:
    id: int
    question: str
    klass: str
    reference: bool
    steps: tuple[str, ...]


def _conclusion(ci: tuple[float, float]) -> str:
    if ci[0] > 0:
        return "above the noise floor"
    if ci[1] < 0:
        return "below the noise floor"
    return "not different from the noise floor"


def _read_run(
    run: str, labeler: str, *, session: Session, ontology_version: str | int | None
) -> tuple[list[_Response], dict[int, tuple[int, ...]], OntologyDoc]:
    """The run's responses with steps and the stored labels' symbols of each usable one."""
    row = require_run(run, session=session)
    version = get_version(ontology_version, session=session)
    doc = document(version)
    spec = ensure_labeler_spec(labeler, session=session)
    responses: list[_Response] = []
    for rid, key, condition, klass, sample, text, steps in session.execute(
        keyed_responses(row.id, Response.text, Response.steps)
    ):
        parsed = tuple(unpack_steps(text, steps)) if text else ()
        if parsed:
            baseline = condition == BASELINE_CONDITION
            responses.append(
                _Response(
                    int(rid),
                    str(key),
                    NULL if baseline else str(klass),
                    baseline and int(sample) == 0,
                    parsed,
                )
            )
    labels: dict[int, dict[int, str]] = {}
    for rid, index, symbol in session.execute(
        select(StepLabel.response_id, StepLabel.step_index, StepLabel.symbol)
        .join(Response, col(Response.id) == col(StepLabel.response_id))
        .where(Response.run_id == row.id)
        .where(StepLabel.labeler_id == spec.id)
        .where(StepLabel.ontology_version_id == version.id)
        .where(StepLabel.repeat == 0)
    ):
        labels.setdefault(int(rid), {})[int(index)] = str(symbol)
    stored = {
        r.id: tuple(doc.symbol_of.get(got[i], 0) for i in range(len(r.steps)))
        for r in responses
        if (got := labels.get(r.id)) is not None and len(got) >= len(r.steps)
    }
    return responses, stored, doc


def _relabel(
    spec: str,
    responses: Sequence[_Response],
    *,
    attempt: int | None,
    doc: OntologyDoc,
    session: Session,
    seed: int,
) -> dict[int, tuple[int, ...]]:
    """Symbols ``spec`` gives every response now (a failed request: left out)."""
    labeler = make_labeler(spec)
    if attempt is not None and hasattr(labeler, "seed"):
        labeler.seed = (int(labeler.seed) + 7919 * attempt + seed) % 2**31
    items = [LabelItem(str(r.id), r.steps, repeat=attempt or 0) for r in responses]
    got = label_items(labeler, items, ontology=doc, session=session)
    return {
        r.id: tuple(doc.symbol_of.get(x.symbol, 0) for x in sorted(res, key=lambda x: x.step_index))
        for r, res in zip(responses, got, strict=True)
        if res
    }


def reasoning_robustness(
    run: str,
    *,
    labeler: str,
    alternatives: Sequence[str],
    resamples: int,
    sample: int,
    bootstrap: int,
    seed: int,
    session: Session,
    ontology_version: str | int | None = None,
    min_per_class: int = MIN_PER_CLASS,
) -> RobustnessResult:
    """Relabel a stratified sample of ``run``'s pairs and read the headline under each.

    Every class gets at least ``min_per_class`` pairs (or all it has, noted in the result).

    Raises:
        InputError: a deterministic labeler asked to resample, or nothing to compare.
    """
    kind = parse_labeler_spec(labeler).kind
    if kind not in _LLM_KINDS and resamples > 1:
        raise InputError(
            f"Labeler {labeler!r} is deterministic (not an LLM): there is nothing to "
            "resample; compare it with another labeler with --resamples 1 --judge SPEC."
        )
    responses, stored, doc = _read_run(
        run, labeler, session=session, ontology_version=ontology_version
    )
    reference = {r.question: r for r in responses if r.reference and r.id in stored}
    by_class: dict[str, list[_Response]] = {}
    for r in responses:
        if not r.reference and r.id in stored and r.question in reference:
            by_class.setdefault(r.klass, []).append(r)
    if NULL not in by_class or len(by_class) < 2:
        raise InputError(
            f"Run {run!r} has no {'noise-floor' if NULL not in by_class else 'perturbed'} "
            f"pairs labeled by {labeler!r}; label it first (driftlens label --run {run} "
            f"--labeler {labeler})."
        )
    picked, strata = stratified_sample(by_class, sample=sample, seed=seed, minimum=min_per_class)
    short = [
        f"{c} ({len(rows)})" for c, rows in sorted(by_class.items()) if len(rows) < min_per_class
    ]
    notes = (
        (
            f"Fewer pairs than the minimum of {min_per_class} per class: {', '.join(short)}; "
            "all of them are sampled.",
        )
        if short
        else ()
    )
    needed = list({r.id: r for r in [*picked, *(reference[p.question] for p in picked)]}.values())
    columns, labels = judgement_columns(
        {rid: stored[rid] for rid in (r.id for r in needed)},
        primary=labeler,
        alternatives=[a for a in dict.fromkeys(alternatives) if a != labeler],
        resamples=resamples,
        ask=lambda spec, attempt: _relabel(
            spec, needed, attempt=attempt, doc=doc, session=session, seed=seed
        ),
    )
    result = _summary(
        run, labeler, picked, strata, reference, columns, labels, resamples, bootstrap, seed
    )
    return replace(result, notes=notes)


def _summary(
    run: str,
    labeler: str,
    picked: Sequence[_Response],
    strata: Sequence[str],
    reference: dict[str, _Response],
    columns: Sequence[dict[int, tuple[int, ...]]],
    labels: Sequence[str],
    resamples: int,
    bootstrap: int,
    seed: int,
) -> RobustnessResult:
    """Drift of every pair under every labeling, the flip rates and the intervals."""
    n, k = len(picked), len(columns)
    drift = np.full((n, k), np.nan)
    for j, symbols in enumerate(columns):
        rows = [
            i
            for i, p in enumerate(picked)
            if p.id in symbols and reference[p.question].id in symbols
        ]
        if rows:
            d = pair_drift(
                [symbols[reference[picked[i].question].id] for i in rows],
                [symbols[picked[i].id] for i in rows],
                alpha=SRI_ALPHA,
            )
            drift[rows, j] = np.asarray(d.sri, dtype=np.float64)
    complete = np.all(np.isfinite(drift), axis=1)
    klass = np.array(strata)[complete]
    if not (klass == NULL).any() or (klass != NULL).sum() == 0:
        raise InputError(
            "No sampled pair was labeled readably by every labeling; nothing to compare."
        )
    kept = [p for p, ok in zip(picked, complete, strict=True) if ok]
    questions = {q: i for i, q in enumerate(dict.fromkeys(p.question for p in kept))}
    qidx = np.array([questions[p.question] for p in kept])
    d = drift[complete]
    null, treated = klass == NULL, klass != NULL
    rng = np.random.default_rng(seed)
    kinds = ["stored", *["resample"] * (resamples - 1), *["alternative"] * (k - resamples)]
    primary = list(range(resamples))
    both = relabel_bootstrap(d[:, primary], qidx, treated, null, n_boot=bootstrap, seed=rng)
    ids = sorted({r for p in kept for r in (p.id, reference[p.question].id)})
    steps = [(r, s) for r in ids for s in range(len(columns[0][r]))]

    def verdicts(j: int) -> np.ndarray:
        got = columns[j]
        return np.array(
            [got[r][s] if r in got and s < len(got[r]) else np.nan for r, s in steps], dtype=float
        )

    base = verdicts(0)
    lines: list[JudgeLine] = []
    per_class: list[dict[str, str]] = []
    for j, (label, kind) in enumerate(zip(labels, kinds, strict=True)):
        one = relabel_bootstrap(d[:, [j]], qidx, treated, null, n_boot=bootstrap, seed=rng)
        lines.append(
            JudgeLine(
                judge=label,
                kind=kind,
                flip_rate=None if j == 0 else flip_rate(base, verdicts(j)),
                mean=one.estimate,
                ci_low=one.judge_free[0],
                ci_high=one.judge_free[1],
                conclusion=_conclusion(one.judge_free),
            )
        )
        per_class.append(
            {
                c: _conclusion(_class(d, qidx, klass, c, j, bootstrap, rng).judge_free)
                for c in sorted(set(klass) - {NULL})
            }
        )
    flipped = tuple(
        f"{ln.judge}: {ln.conclusion} (stored labels: {lines[0].conclusion})"
        for ln in lines[1:]
        if ln.conclusion != lines[0].conclusion
    ) + tuple(
        f"{labels[j]}: class {c} {found[c]} (stored labels: {per_class[0][c]})"
        for j, found in enumerate(per_class[1:], start=1)
        for c in found
        if found[c] != per_class[0][c]
    )
    resampled = [verdicts(j) for j in range(1, resamples)]
    counts: dict[str, int] = {}
    for c in klass:
        counts[str(c)] = counts.get(str(c), 0) + 1
    return RobustnessResult(
        instrument="reasoning",
        run=run,
        primary=labeler,
        alternatives=tuple(labels[resamples:]),
        resamples=resamples,
        n_items=int(complete.sum()),
        strata=counts,
        measure=MEASURE,
        midpoint=0.0,
        mean=both.estimate,
        judge_free=both.judge_free,
        judge_inclusive=both.judge_inclusive,
        judge_share=both.judge_share,
        resample_flip_rate=flip_rate(base, np.stack(resampled, axis=1)) if resampled else None,
        lines=tuple(lines),
        conclusion_flips=flipped,
        bootstrap=bootstrap,
        seed=seed,
    )


def _class(
    d: np.ndarray,
    qidx: np.ndarray,
    klass: np.ndarray,
    name: str,
    j: int,
    bootstrap: int,
    rng: np.random.Generator,
) -> HeadlineInterval:
    """One class's headline under labeling ``j`` alone."""
    keep = (klass == name) | (klass == NULL)
    return relabel_bootstrap(
        d[keep][:, [j]],
        qidx[keep],
        klass[keep] == name,
        klass[keep] == NULL,
        n_boot=bootstrap,
        seed=rng,
    )


def run_robustness(run: str, ask: RobustnessAsk) -> RobustnessResult:
    """The step labeler's robustness for a reasoning-drift run (the plugin's ``robustness``).

    ``ask.options``: ``labeler`` (required: the spec whose stored labels are the headline;
    ``ask.judges`` are then alternative labeler specs) and ``min_per_class`` (pairs sampled
    at least per condition class, default :data:`MIN_PER_CLASS`).
    """
    labeler = ask.options.get("labeler")
    if not labeler:
        raise InputError("Reasoning drift needs the labeler under test: --labeler SPEC.")
    min_per_class = ask.options.get("min_per_class")
    return reasoning_robustness(
        run,
        labeler=str(labeler),
        alternatives=ask.judges,
        resamples=ask.resamples,
        sample=ask.sample,
        bootstrap=ask.bootstrap,
        seed=ask.seed,
        session=ask.session,
        min_per_class=MIN_PER_CLASS if min_per_class is None else int(min_per_class),
    )
