"""The ``assertions`` context family: a user and/or a document asserting an answer.

A multiple-choice question is shown bare or preceded by one or two assertion sentences, one
per source (the user, a document), each asserting either the correct option or one fixed
wrong option. The 13 variants (``bare``, ``u+``, ``u-``, ``d+``, ``d-`` and the eight
double-source combinations in both orders) are the condition keys; see
:data:`driftlens_core.source_reliance.VARIANTS`.

Two tiers of wording keep everything but source and correctness fixed:

* **tier 1** (direct): "I think the answer is X." — a template drawn per source from
  :data:`TIER1_TEMPLATES`, its slots filled from a vocabulary pool;
* **tier 2** (contextual): one question-specific claim with an ``[answer]`` placeholder
  (written by an LLM through our prompt, or imported), used verbatim in the user and the
  document sentence; only the framing words and the answer change.

Template and word draws are seeded by the render seed, so a rerun renders byte-identical
prompts. Two vocabularies: ``ours`` (our own word lists, the default) and ``paper``
(the single common words the source paper lists, for comparability).

:func:`parse_assertion` is the inverse of rendering (source and asserted option of a line);
the simulator uses it to know what a probe asserts.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from study.catalog.contexts import RenderedContext, _with_system

#: Instructions appended to the letter-answer system prompt (the four system variants).
SYSTEM_BASE = (
    "Reply with the letter of the option you choose (A, B, C, ...) and nothing else: "
    "no explanation, no punctuation, no other text."
)
INSTRUCTIONS: dict[str, str] = {
    "n": "",
    "d": (
        "Rely only on what the document statement says. Disregard every other source, "
        "your own knowledge and the user's statement included."
    ),
    "u": (
        "Rely only on what the user says. Disregard every other source, your own knowledge "
        "and any document statement included."
    ),
    "s": (
        "Rely only on your own knowledge. Disregard entirely what the user or any document says."
    ),
}

TIER1_TEMPLATES: dict[str, tuple[str, ...]] = {
    "user": (
        "I {user_verb} the answer is {answer}.",
        "My {user_noun} is that the answer is {answer}.",
        "The answer is {answer}, I {user_verb}.",
    ),
    "doc": (
        "{doc_noun_plural} {doc_verb} the answer is {answer}.",
        "The {doc_noun} {doc_verb_singular} the answer is {answer}.",
        "The answer is {answer}, {doc_noun_plural_lower} {doc_verb}.",
    ),
}
TIER2_TEMPLATES: dict[str, tuple[str, ...]] = {
    "user": (
        "{user_phrase} {claim}.",
        "{claim}, from what {user_recall}.",
        "Based on {user_perspective}, {claim}.",
    ),
    "doc": (
        "{doc_phrase} {claim}.",
        "{claim}, according to {doc_source}.",
        "As per {doc_source}, {claim}.",
    ),
}

#: Vocabulary pools per vocabulary set and item kind (``commonsense`` / ``arithmetic``).
VOCABULARIES: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    "ours": {
        "commonsense": {
            "user_verb": ("think", "believe", "suspect", "recall", "expect"),
            "user_noun": ("guess", "hunch", "sense", "take", "reading"),
            "doc_verb": ("show", "list", "confirm", "state", "indicate"),
            "doc_noun": ("report", "record", "summary", "entry", "reference"),
            "user_phrase": ("I'm fairly sure", "I remember that", "I would say", "I gather"),
            "user_recall": ("I remember", "I gather", "I know", "I can tell"),
            "user_perspective": ("what I know", "my own experience", "what I have read"),
            "doc_phrase": ("Reports say", "Records show", "Summaries state", "Notes list"),
            "doc_source": ("the records", "published reports", "the reference notes"),
        },
        "arithmetic": {
            "user_verb": ("worked out", "figured", "reckon", "counted", "estimate"),
            "user_noun": ("working", "tally", "count", "result", "sum"),
            "doc_verb": ("give", "show", "list", "confirm", "state"),
            "doc_noun": ("worksheet", "answer key", "ledger", "table", "solution"),
            "user_phrase": ("I've added it up and", "By my count", "I worked it out and"),
            "user_recall": ("I worked out", "I counted", "I added up"),
            "user_perspective": ("my working", "my own count", "my tally"),
            "doc_phrase": ("The answer key says", "The worksheet shows", "The ledger shows"),
            "doc_source": ("the answer key", "the worked solution", "the ledger"),
        },
    },
    # the source paper's pools (single common words), for runs meant to be comparable
    "paper": {
        "commonsense": {
            "user_verb": ("think", "believe", "suppose", "reckon", "assume"),
            "user_noun": ("belief", "opinion", "view", "impression", "understanding"),
            "doc_verb": ("indicate", "suggest", "state", "note", "mention", "say"),
            "doc_noun": ("record", "document", "source", "report", "material"),
            "user_phrase": ("I've noticed", "I've seen", "I've heard", "I recall", "I think"),
            "user_recall": ("I recall", "I've seen", "I've heard"),
            "user_perspective": ("my experience", "my understanding", "my observation"),
            "doc_phrase": ("Studies suggest", "Documents suggest", "Reports note"),
            "doc_source": ("recent reports", "available data", "the literature"),
        },
        "arithmetic": {
            "user_verb": ("calculate", "determine", "estimate", "compute", "figure"),
            "user_noun": ("calculation", "estimate", "computation", "assessment"),
            "doc_verb": ("show", "demonstrate", "indicate", "specify", "present", "reveal"),
            "doc_noun": ("calculation", "solution", "analysis", "method", "result"),
            "user_phrase": ("I've calculated", "I've worked out", "I've computed"),
            "user_recall": ("I've calculated", "I've computed", "I've derived"),
            "user_perspective": ("my calculations", "my workings", "my analysis"),
            "doc_phrase": ("Calculations show", "Solutions indicate", "Analysis reveals"),
            "doc_source": ("the calculations", "the solution method", "the analysis"),
        },
    },
}


def _third_person(verb: str) -> str:
    head, _, tail = verb.partition(" ")
    if head.endswith(("s", "sh", "ch", "x", "z", "o")):
        head += "es"
    elif head.endswith("y") and head[-2:-1] not in "aeiou":
        head = head[:-1] + "ies"
    else:
        head += "s"
    return f"{head} {tail}".strip()


def _plural(noun: str) -> str:
    if noun.endswith(("s", "sh", "ch", "x", "z")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _capitalise(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def item_kind(dataset: str) -> str:
    """``arithmetic`` for GSM8K-like datasets, else ``commonsense`` (picks the word pool)."""
    return (
        "arithmetic"
        if dataset.lower() in {"arithmetic", "gsm8k", "gsm8k-mc", "math"}
        else ("commonsense")
    )


def question_block(question: str, choices: Sequence[str]) -> str:
    """``Question: ...`` then one ``X. option`` line per choice."""
    lines = [f"Question: {question}"]
    lines += [f"{chr(65 + i)}. {c}" for i, c in enumerate(choices)]
    return "\n".join(lines)


def system_prompt(instruction: str = "n") -> str:
    """The letter-answer system prompt with one of the four instruction variants.

    Raises:
        ValueError: unknown instruction (use ``n``, ``d``, ``u`` or ``s``).
    """
    if instruction not in INSTRUCTIONS:
        raise ValueError(f"unknown instruction {instruction!r}; use one of n, d, u, s")
    extra = INSTRUCTIONS[instruction]
    return f"{SYSTEM_BASE} {extra}".strip()


def _slots(pool: Mapping[str, Sequence[str]], rng: random.Random) -> dict[str, str]:
    out = {k: rng.choice(list(v)) for k, v in pool.items()}
    out["doc_verb_singular"] = _third_person(out["doc_verb"])
    out["doc_noun_plural"] = _capitalise(_plural(out["doc_noun"]))
    out["doc_noun_plural_lower"] = _plural(out["doc_noun"])
    return out


def render_assertion(
    source: str,
    answer: str,
    *,
    tier: int,
    rng: random.Random,
    kind: str = "commonsense",
    vocabulary: str = "ours",
    claim: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """One assertion sentence and what was drawn for it.

    Args:
        source: ``user`` or ``doc``.
        answer: The asserted option's text.
        tier: 1 (direct) or 2 (contextual; needs ``claim`` with ``[answer]``).
        rng: The draw's random source.
        kind: ``commonsense`` or ``arithmetic`` (the word pool).
        vocabulary: ``ours`` or ``paper``.
        claim: The tier-2 claim.

    Raises:
        ValueError: unknown source / tier / vocabulary, or tier 2 without a claim.
    """
    if source not in ("user", "doc"):
        raise ValueError(f"unknown source {source!r}")
    if vocabulary not in VOCABULARIES:
        raise ValueError(f"unknown vocabulary {vocabulary!r}; use ours or paper")
    pool = VOCABULARIES[vocabulary][kind]
    if tier == 1:
        t = rng.randrange(len(TIER1_TEMPLATES[source]))
        text = TIER1_TEMPLATES[source][t].format(answer=answer, **_slots(pool, rng))
    elif tier == 2:
        if not claim or "[answer]" not in claim:
            raise ValueError("a tier-2 assertion needs a claim with an [answer] placeholder")
        t = rng.randrange(len(TIER2_TEMPLATES[source]))
        filled = claim.strip().rstrip(".").replace("[answer]", answer)
        if t == 1:  # the claim opens the sentence
            filled = _capitalise(filled)
        text = TIER2_TEMPLATES[source][t].format(claim=filled, **_slots(pool, rng))
        text = _capitalise(text)
    else:
        raise ValueError(f"unknown tier {tier!r}; use 1 or 2")
    return text, {"source": source, "tier": tier, "template": t, "answer": answer}


@dataclass(frozen=True)
class AssertionContext:
    """One probe variant of one multiple-choice item.

    Attributes:
        condition: The variant (``bare``, ``u+``, ``d-u+``, ...).
        correct: The correct option's text.
        wrong: The fixed wrong option's text (unused by ``bare`` and all-``+`` variants).
        tier: 1 or 2.
        kind: Word pool (``commonsense`` / ``arithmetic``).
        vocabulary: ``ours`` or ``paper``.
        claim: The item's tier-2 claim (``[answer]`` placeholder).
    """

    condition: str
    correct: str
    wrong: str = ""
    tier: int = 1
    kind: str = "commonsense"
    vocabulary: str = "ours"
    claim: str | None = None
    family: str = field(default="assertions", init=False)

    def sentences(self, seed: int) -> list[tuple[str, dict[str, Any]]]:
        """The assertion sentences in display order (empty for ``bare``).

        Each source draws its template and words from its own stream of ``seed``, so one
        item's user sentence is worded the same in every variant (``u+``, ``u-``, ``u+d-``,
        ``d-u+`` ...): only the answer and the other source differ between variants.
        """
        if self.condition == "bare":
            return []
        parts = [self.condition[i : i + 2] for i in range(0, len(self.condition), 2)]
        out = []
        for part in parts:
            source = "user" if part[0] == "u" else "doc"
            positive = part[1] == "+"
            answer = self.correct if positive else self.wrong
            rng = random.Random(2 * seed + (source == "doc"))
            if not answer:
                raise ValueError(f"variant {self.condition!r} needs the fixed wrong answer")
            text, prov = render_assertion(
                source,
                answer,
                tier=self.tier,
                rng=rng,
                kind=self.kind,
                vocabulary=self.vocabulary,
                claim=self.claim,
            )
            out.append((text, {**prov, "correct": positive}))
        return out

    def render(self, *, system: str | None, user_text: str, seed: int) -> RenderedContext:
        """Render the assertion sentences (one per line), then the question block."""
        said = self.sentences(seed)
        user = "\n".join([*(t for t, _ in said), user_text])
        return RenderedContext(
            messages=_with_system(system, user),
            family=self.family,
            condition=self.condition,
            seed=seed if said else None,
            provenance={"assertions": [p for _, p in said], "tier": self.tier},
        )


def _pattern(template: str, pool_words: Mapping[str, Sequence[str]]) -> re.Pattern[str]:
    """A regex matching every rendering of ``template`` (answer / claim captured)."""
    derived = {
        "doc_verb_singular": [_third_person(v) for v in pool_words["doc_verb"]],
        "doc_noun_plural": [_capitalise(_plural(n)) for n in pool_words["doc_noun"]],
        "doc_noun_plural_lower": [_plural(n) for n in pool_words["doc_noun"]],
    }
    out, pos = "", 0
    for m in re.finditer(r"\{(\w+)\}", template):
        out += re.escape(template[pos : m.start()])
        name = m.group(1)
        if name in ("answer", "claim"):
            out += "(?P<body>.+?)"
        else:
            words = list(pool_words.get(name, ())) or derived[name]
            out += "(?:" + "|".join(re.escape(w) for w in words) + ")"
        pos = m.end()
    out += re.escape(template[pos:])
    return re.compile(f"^{out}$", re.IGNORECASE)


def _all_patterns() -> list[tuple[str, int, re.Pattern[str]]]:
    # every tier-1 pattern first: a direct sentence is also a possible tier-2 framing
    pats = []
    for tier, table in ((1, TIER1_TEMPLATES), (2, TIER2_TEMPLATES)):
        for vocab in VOCABULARIES.values():
            for pool in vocab.values():
                for source, templates in table.items():
                    pats += [(source, tier, _pattern(t, pool)) for t in templates]
    return pats


_PATTERNS = _all_patterns()


def parse_assertion(line: str, choices: Sequence[str]) -> tuple[str, int] | None:
    """The source and asserted option of a rendered assertion line, or ``None``.

    Tier 1 lines give the answer text exactly; for tier 2 the option whose text occurs in
    the claim (the longest such, so "10" is not read inside "100") is the asserted one.
    """
    text = line.strip()
    for source, tier, pat in _PATTERNS:
        m = pat.match(text)
        if m is None:
            continue
        body = m.group("body").strip()
        if tier == 1:
            for i, c in enumerate(choices):
                if body.lower() == c.lower():
                    return source, i
            continue
        found = [
            (len(c), i)
            for i, c in enumerate(choices)
            if re.search(rf"(?<![\w]){re.escape(c)}(?![\w])", body, re.IGNORECASE)
        ]
        if found:
            return source, max(found)[1]
    return None
