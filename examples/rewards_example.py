"""GRPO-style rewards of SPEC §10 on simulated responses (runnable: no model, no network).

Run from the repository root::

    python examples/rewards_example.py

It draws a question's baseline trajectory and two perturbed responses from the built-in
drift simulator, parses them with the workbench's response parser, and scores them with
:mod:`driftlens_core.rewards`: the format reward, lexical diversity of the answer, the
drift rewards (−DTW, −SRI) against the baseline label sequence, and their GRPO sum. It
then wraps the same computation in the ``reward(prompts, completions, **kwargs)`` shape
that GRPO trainers (e.g. TRL's ``GRPOTrainer``) call. Symbols come from the simulator's
ground truth here; in training they come from a labeler (``driftlens label``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from driftlens_core.rewards import (
    dtw_reward,
    format_reward,
    grpo_reward,
    lexical_diversity,
    sri_reward,
)
from study.reasoning.parsing import parse_response
from study.reasoning.sim.bank import LEAF_NAMES
from study.reasoning.sim.generator import simulate

QUESTION = "Is it better to rent or to buy a home when both are affordable? Weigh the trade-offs."
#: Symbol of each value leaf (1..11, SPEC §6 uses integer symbols).
SYMBOL = {leaf: i + 1 for i, leaf in enumerate(LEAF_NAMES)}


def symbols(leaves: Sequence[str]) -> list[int]:
    """Label sequence of a response from leaf names."""
    return [SYMBOL[leaf] for leaf in leaves]


def score(text: str, labels: Sequence[int], reference: Sequence[int]) -> dict[str, float]:
    """Every reward of one response (``+ 0.0`` turns ``-0.0`` into ``0.0`` for printing)."""
    parsed = parse_response(text)
    return {
        "format": format_reward(parsed.steps, parsed.answer),
        "lexical_diversity": lexical_diversity(parsed.answer),
        "dtw": dtw_reward(labels, reference) + 0.0,
        "sri": sri_reward(labels, reference) + 0.0,
        "grpo": grpo_reward(parsed.steps, parsed.answer, labels, reference),
    }


def make_grpo_reward(
    label_fn: Callable[[str], list[int]], reference: Sequence[int]
) -> Callable[..., list[float]]:
    """A reward function in the shape GRPO trainers call: one float per completion.

    Args:
        label_fn: Maps a completion to its label sequence (a labeler in real training).
        reference: The baseline label sequence of the prompt's question.
    """

    def reward(prompts: Sequence[str], completions: Sequence[str], **_: object) -> list[float]:
        out = []
        for completion in completions:
            parsed = parse_response(completion)
            out.append(grpo_reward(parsed.steps, parsed.answer, label_fn(completion), reference))
        return out

    return reward


def main() -> dict[str, dict[str, float]]:
    """Score a baseline and two perturbed responses; print and return the rewards."""
    base = simulate(QUESTION, "", preset="default", sample_index=0, seed=7)
    reference = symbols(base.baseline_leaves)
    cases = {
        "baseline": base,
        "noise (' ')": simulate(QUESTION, " ", preset="default", sample_index=0, seed=7),
        "life event": simulate(
            QUESTION,
            "Last year my father died after a long illness. Since then I think about family "
            "and security far more than before.",
            preset="strong",
            sample_index=0,
            seed=7,
        ),
    }
    results: dict[str, dict[str, float]] = {}
    print(f"reference (baseline) symbols: {reference}")
    print(f"{'response':<14}{'format':>8}{'lexdiv':>8}{'-DTW':>8}{'-SRI':>8}{'GRPO':>8}")
    for name, resp in cases.items():
        r = score(resp.text, symbols(resp.leaves), reference)
        results[name] = r
        print(
            f"{name:<14}{r['format']:>8.3f}{r['lexical_diversity']:>8.3f}"
            f"{r['dtw']:>8.3f}{r['sri']:>8.3f}{r['grpo']:>8.3f}"
        )

    # The trainer-facing wrapper gives the same numbers.
    by_text = {resp.text: symbols(resp.leaves) for resp in cases.values()}
    reward = make_grpo_reward(lambda c: by_text[c], reference)
    batch = reward(prompts=[QUESTION] * len(cases), completions=[c.text for c in cases.values()])
    assert batch == [results[name]["grpo"] for name in cases]
    print("GRPO reward batch:", [round(x, 3) for x in batch])
    return results


if __name__ == "__main__":
    main()
