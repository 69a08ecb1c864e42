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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlmodel import Session

from driftlens_core.judge_noise import flip_rate, two_stage_bootstrap
from driftlens_plugins import get_instrument, instruments, load_ref
from storage.errors import InputError
from storage.repo.meta import set_meta
from study.judge_robustness.result import JudgeLine, RobustnessResult, meta_key
from study.judge_robustness.sampling import Rejudging


def robustness_instruments() -> tuple[str, ...]:
    """The installed instruments that have a judge (or labeler) to test."""
    return tuple(p.name for p in instruments() if p.robustness is not None)


#: A judgement unreadable on more than this share of the sampled answers stops the
#: comparison: its flip rate and interval would rest on the answers it could read (the
#: judges' own 50 % stop let a judge unreadable on 36 % through, silently).
UNREADABLE_MAX = 0.2


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
    conclusions: Sequence[Mapping[str, str]] = (),
    scale: tuple[float, float] | None = None,
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
        conclusions: The instrument's own conclusions, one ``{name: value}`` per column
            (e.g. a drift's sign and significance, a ranking); any value that differs from
            column 0's is a conclusion flip.
        scale: ``(low, high)`` of the headline value: every interval is clipped to it
            (the judge-inclusive one adds a t-distributed shift that can leave the scale).

    Raises:
        InputError: no item has a verdict in every column, or a judgement was unreadable
            on more than :data:`UNREADABLE_MAX` of the sampled answers.
    """
    readable = np.isfinite(values)
    complete = np.all(readable, axis=1)
    n_sampled = len(complete)
    unreadable = 1.0 - readable.mean(axis=0) if n_sampled else np.zeros(len(labels))
    worst = int(np.argmax(unreadable)) if len(labels) else 0
    if n_sampled and unreadable[worst] > UNREADABLE_MAX:
        raise InputError(
            f"{labels[worst]} gave no readable verdict on {int((~readable[:, worst]).sum())} "
            f"of {n_sampled} sampled answers ({unreadable[worst]:.0%}, above the "
            f"{UNREADABLE_MAX:.0%} a robustness comparison allows): its flip rate would "
            "compare only the answers it could read; fix its prompt or parser, or drop it."
        )
    if not complete.any():
        raise InputError(
            "No sampled item was judged readably by every judgement; nothing to compare."
        )
    notes: list[str] = []
    if not complete.all():
        why = ", ".join(
            f"{lb} unreadable on {int((~readable[:, j]).sum())}"
            for j, lb in enumerate(labels)
            if not readable[:, j].all()
        )
        notes.append(
            f"{n_sampled - int(complete.sum())} of {n_sampled} sampled answers left out "
            f"because a judgement had no readable verdict ({why})."
        )
    v = values[complete]
    s = verdicts[complete]
    rng = np.random.default_rng(seed)
    both = two_stage_bootstrap(v, n_boot=bootstrap, seed=rng)

    def clip(ci: tuple[float, float]) -> tuple[float, float]:
        if scale is None:
            return ci
        return (min(max(ci[0], scale[0]), scale[1]), min(max(ci[1], scale[0]), scale[1]))

    if scale is not None and clip(both.judge_inclusive) != both.judge_inclusive:
        notes.append(
            f"The judge-inclusive interval {_ci(both.judge_inclusive)} left the "
            f"{scale[0]:g}-{scale[1]:g} scale; it is shown clipped to the scale."
        )
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
                ci_low=clip(one.judge_free)[0],
                ci_high=clip(one.judge_free)[1],
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
    if conclusions:
        base = conclusions[0]
        flipped += tuple(
            f"{label}: {name} {found.get(name, 'not read')} (stored judgement: {value})"
            for label, found in zip(labels[1:], conclusions[1:], strict=True)
            for name, value in base.items()
            if found.get(name) != value
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
        judge_free=clip(both.judge_free),
        judge_inclusive=clip(both.judge_inclusive),
        judge_share=both.judge_share,
        resample_flip_rate=resample_flips,
        lines=tuple(lines),
        conclusion_flips=flipped,
        bootstrap=bootstrap,
        seed=seed,
        notes=tuple(notes),
    )


def _ci(ci: tuple[float, float]) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]"


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
    options: Mapping[str, Any] | None = None,
) -> RobustnessResult:
    """Re-judge a stratified sample of ``run`` and keep the summary (see the module doc).

    Args:
        instrument: One of :func:`robustness_instruments`.
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
        options: The instrument's own options, read by its adapter (the plugin's
            ``robustness`` part; e.g. the step labeler under test, a study's batteries).

    Raises:
        InputError: unknown instrument, bad counts, or no usable primary judge.
    """
    covered = robustness_instruments()
    if instrument not in covered:
        raise InputError(
            f"Judge robustness covers {', '.join(covered)} so far, not {instrument!r}."
        )
    if resamples < 1 or sample < 1 or bootstrap < 1:
        raise InputError("--resamples, --sample and --bootstrap must be at least 1.")
    from study.limits import JUDGE_RESAMPLES

    JUDGE_RESAMPLES.check(resamples)
    if resamples == 1 and not judges:
        raise InputError("Give --resamples of 2 or more, or an alternative --judge.")
    ask = RobustnessAsk(
        session, resamples, judges, primary, sample, bootstrap, seed, concurrency,
        dict(options or {}),
    )  # fmt: skip
    adapter = load_ref(str(get_instrument(instrument).robustness))
    result = adapter(run, ask)
    set_meta(meta_key(instrument, run), json.dumps(result.to_dict()), session=session)
    session.commit()
    return result


@dataclass(frozen=True)
class RobustnessAsk:
    """What one robustness call asks of an instrument's adapter (see :func:`judge_robustness`).

    An instrument's plugin names its adapter (``robustness``): ``fn(run, ask) ->
    RobustnessResult``, which gathers the re-judgements through :meth:`asked` and summarises
    them through :meth:`summary`. ``options`` carries the instrument's own options.
    """

    session: Session
    resamples: int
    judges: Sequence[str]
    primary: str | None
    sample: int
    bootstrap: int
    seed: int
    concurrency: int
    options: Mapping[str, Any]

    def require_judge_variance(self) -> None:
        """Refuse, before any request, a call that leaves the judge's variance one degree of
        freedom: with two judgements per answer the judge-inclusive interval's t(1) shift is
        a Cauchy draw (8.75x wider in issue 37). Adapters summarised by :meth:`summary` call
        it first; an instrument with statistics of its own (a labeler comparison) need not.

        Raises:
            InputError: fewer than three judgements per answer, the stored one included.
        """
        if self.resamples + len(dict.fromkeys(self.judges)) < 3:
            raise InputError(
                "The judge-inclusive interval needs at least three judgements per answer (the "
                "stored one included); give --resamples 2 or more with --judge, or two --judge."
            )

    def asked(self, stored: Sequence[str], what: str) -> Rejudging:
        """What an instrument's judgements call is asked.

        The primary judge is the one named, else the only judge in ``stored``; the
        alternatives are the other judges named, each once.

        Raises:
            InputError: no judge named and ``stored`` holds none or several.
        """
        primary = _primary(stored, what, self.primary)
        return Rejudging(
            primary=primary,
            alternatives=[j for j in dict.fromkeys(self.judges) if j != primary],
            resamples=self.resamples,
            sample=self.sample,
            seed=self.seed,
            session=self.session,
            concurrency=self.concurrency,
        )

    def summary(self, instrument: str, run: str, got: Any, **measured: Any) -> RobustnessResult:
        """:func:`summarize` of an instrument's judgements ``got`` (labels and strata)."""
        return summarize(
            instrument=instrument,
            run=run,
            labels=got.labels,
            kinds=_kinds(len(got.labels), self.resamples),
            strata=got.strata,
            bootstrap=self.bootstrap,
            seed=self.seed,
            **measured,
        )


def _kinds(n_labels: int, resamples: int) -> list[str]:
    """Each judgement's kind: the stored one, its resamples, then the alternative judges."""
    return ["stored", *["resample"] * (resamples - 1), *["alternative"] * (n_labels - resamples)]


def _primary(stored: Sequence[str], what: str, primary: str | None) -> str:
    if primary is not None:
        return primary
    if len(stored) != 1:
        raise InputError(
            f"{what} was scored by {len(stored)} judges ({', '.join(stored) or 'none'}); "
            "name the one to test with --primary."
        )
    return stored[0]
