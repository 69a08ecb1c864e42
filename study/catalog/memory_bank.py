"""The ``memory_bank`` context family: a user's stored memories, shuffled, before a request.

A bank instance shows the answering model its core memories (conflict-bearing and
background) and the first ``N`` of its same-domain distractors as one unlabelled list, in
an order drawn from a recorded seed. Provenance (which line is core, background or
distractor) is recorded for judges and reports and never rendered.

The distractor dose series is nested: the bank at ``N`` distractors holds the bank at
``N - 1`` plus one more, so doses of the same instance are paired by construction.
Rendering is a pure function of the instance, the request and the seed: a rerun renders
byte-identical prompts and hits the request cache.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from study.catalog.contexts import RenderedContext, _with_system

BANK_HEADER = "Stored memories about the user:"
REQUEST_HEADER = "Request:"


def bank_condition(n_distractors: int) -> str:
    """The condition key of a dose (``"N0"`` … ``"N6"``)."""
    return f"N{n_distractors}"


@dataclass(frozen=True)
class MemoryBankContext:
    """One bank at one distractor dose.

    Attributes:
        condition: The condition key (see :func:`bank_condition`).
        core: Conflict-bearing memories, in the instance's order.
        background: Neutral background memories.
        distractors: The distractors shown at this dose.
    """

    condition: str
    core: tuple[str, ...]
    background: tuple[str, ...] = ()
    distractors: tuple[str, ...] = ()
    family: str = field(default="memory_bank", init=False)

    def lines(self, seed: int) -> list[tuple[str, str, int]]:
        """The shown memories as ``(text, provenance, index within its group)``, shuffled."""
        items = [(t, "core", i) for i, t in enumerate(self.core)]
        items += [(t, "background", i) for i, t in enumerate(self.background)]
        items += [(t, "distractor", i) for i, t in enumerate(self.distractors)]
        random.Random(seed).shuffle(items)
        return items

    def render(self, *, system: str | None, user_text: str, seed: int) -> RenderedContext:
        """Render the shuffled bank as a bulleted list, then the request."""
        items = self.lines(seed)
        bank = "\n".join(f"- {text}" for text, _, _ in items)
        user = f"{BANK_HEADER}\n{bank}\n\n{REQUEST_HEADER} {user_text}"
        return RenderedContext(
            messages=_with_system(system, user),
            family=self.family,
            condition=self.condition,
            seed=seed,
            provenance={
                "order": [{"provenance": p, "index": i} for _, p, i in items],
                "n_distractors": len(self.distractors),
            },
        )
