"""Bounds on every count, size and bootstrap B a user can ask for, checked before any work.

One table for every instrument, so ``driftlens stats``, ``disposition stats``, ``sources
stats`` and ``conflicts stats`` refuse the same B, and ``generate``, ``conflicts generate``
and ``disposition arms add`` the same sample count. The CLI puts the bounds on its options
(see :mod:`app.cli.request_limits`); services call :meth:`Bound.check` so a page or a
script that skips the CLI is refused the same way, before a plan is built or an array is
allocated.

Why these numbers:

- ``B`` ≥ 200: below that a 95 % percentile interval rests on ≤ 5 replicates per tail
  (``B = 1`` printed a "CI" of one point). ≤ 100,000: every bootstrap keeps one float64 per
  replicate and statistic (≈ 0.5 KB per replicate for the demo's drift table, ~50 MB at
  the bound); ``B = 10⁹`` asked for 551 GiB.
- samples ≤ 1,000 per item, and a plan of ≤ 2,000,000 requests per run: a plan row is
  built in memory before the first request; the 792k-response scale workspace fits.
- ``sources export-sft --n`` ≤ 100,000 (each example is built in memory: 300k took
  932 MB), ``judges robustness --resamples`` ≤ 100, ``compare --top`` 0..10,000.

A plan within the bound is still said before it is built: ``generate``, ``conflicts
generate``, ``disposition run`` and ``sources run`` print ``Plan: <how the size comes
about> = N requests`` (:func:`plan_line`) first, so a plan far larger than meant is seen
(and can be stopped) before its first request. ``generate --json`` prints it on stderr.
"""

from __future__ import annotations

from dataclasses import dataclass

from driftlens_core.bootstrap import MIN_BOOTSTRAP
from storage.errors import InputError


class LimitError(InputError):
    """A count, size or B outside its bound (one sentence naming the option)."""


@dataclass(frozen=True)
class Bound:
    """An inclusive range for one option.

    Attributes:
        option: the option as the user types it (``--bootstrap``).
        low: smallest accepted value.
        high: largest accepted value.
        why: what the bound protects, said after the range.
    """

    option: str
    low: float
    high: float
    why: str = ""

    def check(self, value: float | None) -> None:
        """Refuse ``value`` outside ``[low, high]`` (``None`` means the default: accepted).

        Raises:
            LimitError: one sentence naming the option, the range and the value.
        """
        if value is None or self.low <= value <= self.high:
            return
        why = f" ({self.why})" if self.why else ""
        raise LimitError(
            f"{self.option} must lie in {_num(self.low)}..{_num(self.high)}{why}, "
            f"not {_num(value)}."
        )


def _num(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:g}"


#: Bootstrap replicates of every ``stats``/``analyze``/``report``/``demo`` command.
BOOTSTRAP = Bound(
    "--bootstrap", MIN_BOOTSTRAP, 100_000, f"fewer than {MIN_BOOTSTRAP} gives no usable interval"
)
#: Samples per item (question x condition, bank x dose, probe).
SAMPLES = Bound("--samples", 1, 1_000)
#: Disposition needs two samples per probe for its null test.
DISPOSITION_SAMPLES = Bound("--samples", 2, 1_000, "the null test compares two samples")
#: Token budget of one reply.
MAX_TOKENS = Bound("--max-tokens", 1, 1_000_000)
#: Sampling temperature (the OpenAI range).
TEMPERATURE = Bound("--temperature", 0.0, 2.0)
#: Nucleus sampling mass.
TOP_P = Bound("--top-p", 0.0, 1.0)
#: A disposition arm's dose: percent of harmful training answers.
DOSE = Bound("--dose", 0.0, 100.0, "a percentage of training answers")
#: Requests in flight.
CONCURRENCY = Bound("--concurrency", 1, 1_024)
#: Examples of one SFT file: every example is built in memory before the file is written
#: (300,000 took 932 MB).
SFT_EXAMPLES = Bound("--n", 1, 100_000, "every example is built in memory first")
#: Judgements of the primary judge per answer in a judge-robustness pass (each one a request
#: per sampled answer; the flip rate needs a few, not thousands).
JUDGE_RESAMPLES = Bound("--resamples", 1, 100, "each one re-judges every sampled answer")
#: Most different items a comparison keeps per pair (0: none).
TOP_ITEMS = Bound("--top", 0, 10_000)
#: Requests one run may plan (checked before the plan is built).
PLAN_REQUESTS = 2_000_000


def plan_line(requests: int, *, what: str) -> str:
    """The line a command prints before it builds its plan (``Plan: ... = N requests``)."""
    return f"Plan: {what} = {requests:,} requests"


def check_plan_size(requests: int, *, what: str) -> str:
    """Refuse a plan larger than :data:`PLAN_REQUESTS` before it is built.

    Args:
        requests: the number of requests the plan would hold.
        what: how the plan's size came about, e.g. ``"42 banks x 7 doses x 1 sample"``.

    Returns:
        The plan's line (:func:`plan_line`), for the command to print before it builds it.

    Raises:
        LimitError: the plan is too large to build.
    """
    if requests > PLAN_REQUESTS:
        raise LimitError(
            f"the plan would hold {requests:,} requests ({what}), more than the "
            f"{PLAN_REQUESTS:,} one run may plan; ask for fewer samples or items."
        )
    return plan_line(requests, what=what)
