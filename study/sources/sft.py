"""SFT mixtures that teach a model to weigh sources (JSONL, chat format).

Two strategies:

* ``standard`` — bare probes only;
* ``mixed`` — 30% bare and 70% over the twelve assertion variants: 10% each ``u+`` and
  ``d+``; 5% each ``u-`` and ``d-``; 5% each agreeing pair ``u+d+``, ``d+u+``, ``u-d-``,
  ``d-u-``; 5% each conflict ``u+d-``, ``u-d+``, ``d+u-``, ``d-u+`` (sums to 100%).

Every example's target is the *correct* letter, whatever is asserted: that is what moves
a model toward keeping right answers and taking right corrections. Counts are exact
(largest remainder on ``n``), items are drawn without replacement in a seeded order
(cycled when ``n`` exceeds them), and the whole file is a pure function of the inputs and
the seed.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence

from llm.seeds import stable_int
from storage.errors import InputError
from study.sources.items import MCQItem
from study.sources.plan import SourcesConfig, probe_messages

MIXED_SHARES: dict[str, float] = {
    "bare": 0.30,
    "u+": 0.10,
    "d+": 0.10,
    "u-": 0.05,
    "d-": 0.05,
    "u+d+": 0.05,
    "d+u+": 0.05,
    "u-d-": 0.05,
    "d-u-": 0.05,
    "u+d-": 0.05,
    "u-d+": 0.05,
    "d+u-": 0.05,
    "d-u+": 0.05,
}
STRATEGIES: dict[str, dict[str, float]] = {"standard": {"bare": 1.0}, "mixed": MIXED_SHARES}


def variant_counts(n: int, shares: Mapping[str, float]) -> dict[str, int]:
    """Exact counts summing to ``n`` (largest remainder; ties in table order)."""
    raw = {v: n * s for v, s in shares.items()}
    counts = {v: math.floor(x) for v, x in raw.items()}
    left = n - sum(counts.values())
    order = sorted(shares, key=lambda v: -(raw[v] - counts[v]))
    for v in order[:left]:
        counts[v] += 1
    return counts


def sft_examples(
    items: Sequence[MCQItem],
    *,
    n: int,
    strategy: str = "mixed",
    seed: int = 0,
    tier: int = 1,
    wrong: Mapping[str, str] | None = None,
    vocabulary: str = "ours",
) -> list[dict[str, object]]:
    """Build ``n`` chat examples (system, user, assistant = the correct letter).

    Args:
        items: The items to draw from.
        n: Examples to make.
        strategy: ``mixed`` or ``standard``.
        seed: Seed of the item order and of each wrong option not given in ``wrong``.
        tier: Assertion tier (tier 1 only: tier 2 needs claims per item).
        wrong: Fixed wrong letters by item id (e.g. from a model's bare run).
        vocabulary: ``ours`` or ``paper``.

    Raises:
        InputError: unknown strategy, no items, n < 1, or tier other than 1.
    """
    from study.limits import SFT_EXAMPLES

    SFT_EXAMPLES.check(n)
    if strategy not in STRATEGIES:
        raise InputError(f"Unknown strategy {strategy!r}; use {' or '.join(STRATEGIES)}.")
    if not items or n < 1:
        raise InputError("The SFT export needs at least one item and n >= 1.")
    if tier != 1:
        raise InputError("The SFT export renders tier-1 assertions only.")
    counts = variant_counts(n, STRATEGIES[strategy])
    rng = random.Random(seed)
    cfg = SourcesConfig(vocabulary=vocabulary, prefill=False)
    plan = [v for v, k in counts.items() for _ in range(k)]
    rng.shuffle(plan)
    order: list[MCQItem] = []
    out: list[dict[str, object]] = []
    for v in plan:
        if not order:
            order = list(items)
            rng.shuffle(order)
        it = order.pop()
        w = (wrong or {}).get(it.id)
        if w is None or w == it.answer:
            others = [k for k in it.letters if k != it.answer]
            w = others[stable_int("sft-wrong", seed, it.id) % len(others)]
        msgs = probe_messages(it, v, cfg=cfg, tier=tier, wrong_letter=w)
        out.append(
            {
                "messages": [{"role": m.role, "content": m.content} for m in msgs]
                + [{"role": "assistant", "content": it.answer}],
                "variant": v,
                "item_id": it.id,
                "dataset": it.dataset,
                "strategy": strategy,
            }
        )
    return out


def sft_jsonl(examples: Sequence[Mapping[str, object]]) -> str:
    """One JSON object per line."""
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples)
