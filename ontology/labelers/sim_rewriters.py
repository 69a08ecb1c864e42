"""The simulated rewriter's two harmful styles (``sim/rewriter-blur``, ``sim/rewriter-append``).

``sim/rewriter-operational`` (and ``sim/default``) answers a rewrite request the way the
seed describes good rewrites: it sorts the example steps by their true leaf and adds the
words that separate the two sides as triggers of one and exclusions of the other
(:meth:`ontology.labelers.sim.SimStudioBackend._rewrite`). The two styles here exist so that
the refinement loop's gate can be seen to work:

* **blur** makes the pair overlap completely: both definitions become one vague text
  without triggers or exclusions, in words most steps use (``shared`` rises to 1, ``sep``
  falls and ``pull`` rises in :mod:`ontology.labelers.sim_definitions`: the two leaves are
  confused with each other and draw steps of other leaves);
* **append** keeps appending: each request adds the two most frequent words of each side's
  example steps as triggers (helps while there are new ones) and one more general sentence
  to both definitions (the same words in both, and longer text: hurts once the useful words
  are in).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from ontology.parsing import split_definition

REWRITER_PRESETS = ("sim/rewriter-operational", "sim/rewriter-blur", "sim/rewriter-append")

_APPENDED = (
    "It also takes in the wider situation, the people around the decision, the likely "
    "outcomes and the reasons given for them."
)
Truth = Callable[[str], str | None]
_BLURRED = (
    "Whatever matters to the people in the decision: the option, the choice and the way it "
    "should be made, here and over time."
)
_WORD = re.compile(r"[a-z][a-z'-]{4,}")


def _block(prose: str, triggers: list[str], exclusions: list[str]) -> str:
    lines = [prose.strip()]
    if triggers:
        lines.append(f"Triggers: {', '.join(dict.fromkeys(triggers))}")
    if exclusions:
        lines.append(f"Exclusions: {', '.join(dict.fromkeys(exclusions))}")
    return "\n".join(lines)


def _blur(defs: dict[int, str]) -> tuple[str, str]:
    """Both definitions become one vague text, without triggers or exclusions.

    Empty ``Triggers:``/``Exclusions:`` lines clear the lists (an absent line keeps them).
    """
    del defs  # what the two leaves said is exactly what blurring throws away
    text = f"{_BLURRED}\nTriggers:\nExclusions:"
    return text, text


def _example_words(user: str, names: dict[str, str], truth: Truth) -> dict[str, Counter[str]]:
    region = user.split("UNDER LEAF 2\n", 1)[-1].split("\n\nTASK\n", 1)[0]
    out: dict[str, Counter[str]] = {"1": Counter(), "2": Counter()}
    for line in region.splitlines():
        text = re.sub(r"^\d+\.\s*", "", line)
        leaf = truth(text)
        for side in ("1", "2"):
            if leaf is not None and leaf == names.get(side, "").strip():
                out[side].update(sorted(set(_WORD.findall(text.lower()))))  # stable ties
    return out


def _append(user: str, defs: dict[int, str], truth: Truth) -> tuple[str, str]:
    names = dict(re.findall(r"^LEAF (\d): (.+)$", user, re.MULTILINE))
    found = _example_words(user, names, truth)
    out = []
    for side, other in (("1", "2"), ("2", "1")):
        prose, t, x = split_definition(defs.get(int(side), ""))
        have = set(t or ())
        fresh = [
            w for w, _ in found[side].most_common() if w not in found[other] and w not in have
        ][:2]
        out.append(_block(f"{prose} {_APPENDED}", [*(t or ()), *fresh], list(x or ())))
    return out[0], out[1]


def rewrite_as(style: str, user: str, defs: dict[int, str], *, truth: Truth) -> str:
    """The simulated answer of rewriter ``style`` (``blur`` or ``append``) to a request.

    Args:
        style: ``blur`` or ``append``.
        user: The rewrite request's user message.
        defs: The two current definition blocks (1 and 2).
        truth: A simulated step's true leaf (``None`` for text not from the bank).
    """
    if style == "blur":
        one, two = _blur(defs)
    elif style == "append":
        one, two = _append(user, defs, truth)
    else:  # pragma: no cover - the backend only passes the two styles
        raise ValueError(f"unknown simulated rewriter style {style!r}")
    return f"<def1>{one}</def1>\n<def2>{two}</def2>"
