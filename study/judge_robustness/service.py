"""``driftlens judges robustness``: how much of an instrument's headline is its judge.

For one stored run, a stratified sample of judged items is re-judged ``K - 1`` more times
by the same judge (new seeds, their own cache entries) and once by every alternative
judge. From the ``(items × judgements)`` matrix of headline values:

* the verdict **flip rate** of the same judge's resamples and of each alternative judge
  (share of item × dimension verdicts that differ from the stored one);
* the headline mean with the **judge-free** interval (items resampled, the stored
  judgement taken as the truth) beside the **judge-inclusive** one (items, then one
  judgement per replicate: :func:`driftlens_core.judge_noise.two_stage_bootstrap`), and
  the judge's share of the variance;
* each judgement's own judge-free interval and whether the **conclusion** drawn from it
  (the interval above, below or around the scale's midpoint) flips under another judge.

The summary is kept in the workspace (``judge_robustness:<instrument>:<run>``) so the
instrument's report shows it, and says "not assessed" while it has not been run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from sqlmodel import Session

from driftlens_core.judge_noise import flip_rate, two_stage_bootstrap
from storage.errors import InputError
from storage.repo.meta import get_meta, set_meta

INSTRUMENTS: tuple[str, ...] = ("conflicts",)
VERSION = 1


@dataclass(frozen=True)
class JudgeLine:
    """One judgement column: its flip rate against the stored one and its own interval."""

    judge: str
    kind: str  # "stored", "resample" or "alternative"
    flip_rate: float | None
    mean: float
    ci_low: float
    ci_high: float
    conclusion: str


@dataclass(frozen=True)
class RobustnessResult:
    """What ``judges robustness`` found for one run (JSON via :meth:`to_dict`)."""

    instrument: str
    run: str
    primary: str
    alternatives: tuple[str, ...]
    resamples: int
    n_items: int
    strata: dict[str, int]
    measure: str
    midpoint: float
    mean: float
    judge_free: tuple[float, float]
    judge_inclusive: tuple[float, float]
    judge_share: float
    resample_flip_rate: float | None
    lines: tuple[JudgeLine, ...]
    conclusion_flips: tuple[str, ...]
    bootstrap: int
    seed: int
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN becomes ``null``)."""
        out: dict[str, Any] = _clean(asdict(self))
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RobustnessResult:
        """Inverse of :meth:`to_dict`."""
        return cls(
            **{
                **d,
                "alternatives": tuple(d["alternatives"]),
                "judge_free": tuple(d["judge_free"]),
                "judge_inclusive": tuple(d["judge_inclusive"]),
                "lines": tuple(JudgeLine(**ln) for ln in d["lines"]),
                "conclusion_flips": tuple(d["conclusion_flips"]),
            }
        )

    @property
    def widths(self) -> tuple[float, float]:
        """``(judge-free, judge-inclusive)`` interval widths."""
        return (
            self.judge_free[1] - self.judge_free[0],
            self.judge_inclusive[1] - self.judge_inclusive[0],
        )


def _clean(x: Any) -> Any:
    if isinstance(x, float) and not np.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def meta_key(instrument: str, run: str) -> str:
    """Where the result of one run is kept."""
    return f"judge_robustness:{instrument}:{run}"


def _conclusion(lo: float, hi: float, midpoint: float) -> str:
    if lo > midpoint:
        return "above the midpoint"
    if hi < midpoint:
        return "below the midpoint"
    return "not different from the midpoint"


def summarize(
    *,
    instrument: str,
    run: str,
    labels: Sequence[str],
    kinds: Sequence[str],
    values: np.ndarray,
    verdicts: np.ndarray,
    strata: Sequence[str],
    measure: str,
    midpoint: float,
    bootstrap: int,
    seed: int,
) -> RobustnessResult:
    """The result from the matrices (the instrument adapters gather them).

    Args:
        instrument: The instrument.
        run: The run.
        labels: One label per judgement column (column 0 the stored judgement).
        kinds: ``stored`` / ``resample`` / ``alternative`` per column.
        values: ``(n_items, n_columns)`` headline values (NaN: no verdict).
        verdicts: ``(n_items, n_columns, n_dims)`` verdicts the flip rate compares.
        strata: Stratum of every item.
        measure: What the headline value is.
        midpoint: The scale's midpoint (the conclusion's reference).
        bootstrap: Replicates.
        seed: Seed.

    Raises:
        InputError: no item has a verdict in every column.
    """
    complete = np.all(np.isfinite(values), axis=1)
    if not complete.any():
        raise InputError(
            "No sampled item was judged readably by every judgement; nothing to compare."
        )
    v = values[complete]
    s = verdicts[complete]
    rng = np.random.default_rng(seed)
    both = two_stage_bootstrap(v, n_boot=bootstrap, seed=rng)
    stored = s[:, 0, :].ravel()
    lines = []
    for j, (label, kind) in enumerate(zip(labels, kinds, strict=True)):
        one = two_stage_bootstrap(v[:, [j]], n_boot=bootstrap, seed=rng)
        lines.append(
            JudgeLine(
                judge=label,
                kind=kind,
                flip_rate=None if j == 0 else flip_rate(stored, s[:, j, :].ravel()),
                mean=one.mean,
                ci_low=one.judge_free[0],
                ci_high=one.judge_free[1],
                conclusion=_conclusion(*one.judge_free, midpoint),
            )
        )
    resampled = [j for j, k in enumerate(kinds) if k == "resample"]
    resample_flips = (
        flip_rate(stored, np.stack([s[:, j, :].ravel() for j in resampled], axis=1))
        if resampled
        else None
    )
    flipped = tuple(
        f"{ln.judge}: {ln.conclusion} (stored judgement: {lines[0].conclusion})"
        for ln in lines[1:]
        if ln.conclusion != lines[0].conclusion
    )
    counts: dict[str, int] = {}
    for st, ok in zip(strata, complete, strict=True):
        if ok:
            counts[st] = counts.get(st, 0) + 1
    return RobustnessResult(
        instrument=instrument,
        run=run,
        primary=labels[0],
        alternatives=tuple(lb for lb, k in zip(labels, kinds, strict=True) if k == "alternative"),
        resamples=1 + len(resampled),
        n_items=int(complete.sum()),
        strata=counts,
        measure=measure,
        midpoint=midpoint,
        mean=both.mean,
        judge_free=both.judge_free,
        judge_inclusive=both.judge_inclusive,
        judge_share=both.judge_share,
        resample_flip_rate=resample_flips,
        lines=tuple(lines),
        conclusion_flips=flipped,
        bootstrap=bootstrap,
        seed=seed,
    )


def judge_robustness(
    instrument: str,
    run: str,
    *,
    session: Session,
    resamples: int = 3,
    judges: Sequence[str] = (),
    primary: str | None = None,
    sample: int = 60,
    bootstrap: int = 2000,
    seed: int = 0,
    concurrency: int = 16,
) -> RobustnessResult:
    """Re-judge a stratified sample of ``run`` and keep the summary (see the module doc).

    Args:
        instrument: One of :data:`INSTRUMENTS`.
        run: The stored run.
        session: Session (the cache, the run, the kept summary); committed at the end.
        resamples: Judgements of the primary judge per item, the stored one included.
        judges: Alternative judges (``provider/model``).
        primary: The judge whose stored verdicts are the headline (default: the run's
            only judge).
        sample: Items to re-judge, spread over the strata.
        bootstrap: Replicates.
        seed: Seed of the sample and the bootstrap.
        concurrency: Requests in flight.

    Raises:
        InputError: unknown instrument, bad counts, or no usable primary judge.
    """
    if instrument not in INSTRUMENTS:
        raise InputError(
            f"Judge robustness covers {', '.join(INSTRUMENTS)} so far, not {instrument!r}."
        )
    if resamples < 1 or sample < 1 or bootstrap < 1:
        raise InputError("--resamples, --sample and --bootstrap must be at least 1.")
    if resamples == 1 and not judges:
        raise InputError("Give --resamples of 2 or more, or an alternative --judge.")
    from study.conflicts.robustness import conflicts_judgements, stored_judges

    if primary is None:
        stored = stored_judges(run, session=session)
        if len(stored) != 1:
            raise InputError(
                f"Run {run!r} was scored by {len(stored)} judges "
                f"({', '.join(stored) or 'none'}); name the one to test with --primary."
            )
        primary = stored[0]
    got = conflicts_judgements(
        run,
        primary=primary,
        alternatives=[j for j in dict.fromkeys(judges) if j != primary],
        resamples=resamples,
        sample=sample,
        seed=seed,
        session=session,
        concurrency=concurrency,
    )
    n_alt = len(got.labels) - resamples
    kinds = ["stored", *["resample"] * (resamples - 1), *["alternative"] * n_alt]
    result = summarize(
        instrument=instrument,
        run=run,
        labels=got.labels,
        kinds=kinds,
        values=got.totals(),
        verdicts=got.scores,
        strata=got.strata,
        measure="rubric total D1-D5 (0-20) per answer",
        midpoint=10.0,
        bootstrap=bootstrap,
        seed=seed,
    )
    set_meta(meta_key(instrument, run), json.dumps(result.to_dict()), session=session)
    session.commit()
    return result


def stored_robustness(instrument: str, run: str, *, session: Session) -> RobustnessResult | None:
    """The kept result of ``run``, or ``None`` when robustness was not assessed."""
    raw = get_meta(meta_key(instrument, run), session=session)
    if raw is None:
        return None
    data = json.loads(raw)
    return RobustnessResult.from_dict(data) if data.get("version") == VERSION else None
