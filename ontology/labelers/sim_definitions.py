"""A simulated labeler whose confusions follow the definitions it is sent (``sim:definitions``).

The fixed-rate simulated labeler (``sim:confuse=A~B@R``) errs at the same rate whatever
the ontology says, so it cannot show that a rewrite helps or hurts. This model reads the
leaf definitions out of the labeling request and makes the chance of labeling a step of
true leaf ``T`` as another leaf ``L`` depend on them:

``w(T, L, s) = base(T, L) · m_k(T, L) · exp(-β·min(sep, SEP_CAP) + γ·pull + δ·shared + λ·long)``

* ``base``: :data:`BASE_SIBLING` for two leaves under one root, :data:`BASE_CROSS` otherwise;
* ``m_k``: the labeler's own taste for the pair, ``exp(σ·z)`` with ``z`` a standard normal
  drawn from the labeler's seed and the pair (three seeds are three different models);
* ``sep``: what in the step *separates* ``T`` from ``L``: ``T``'s triggers that ``L`` does
  not share, ``L``'s exclusions that ``T`` does not share (one each), and words of ``T``'s
  prose that no other leaf's prose uses (:data:`PROSE` each), counted when they occur in
  the step (a word two definitions share tells nothing apart);
* ``pull``: what in the step points at ``L``: ``L``'s triggers that ``T`` lacks, ``T``'s
  exclusions, and words of ``L``'s prose that ``T``'s lacks (vague wording draws steps);
* ``shared``: the Jaccard overlap of the two definitions' words (prose and triggers);
* ``long``: words beyond :data:`LONG_WORDS` in either definition, per ten words (very long
  definitions blur every decision they take part in).

capped at :data:`W_MAX` (another leaf is at most as likely as the truth). The labeler
answers ``T`` with probability ``1 / (1 + Σ_L w)`` and ``L`` with
``w_L / (1 + Σ w)``, read off one uniform draw per (labeler, step) that does not depend on
the ontology: the same labeler relabeling the same step under two versions uses the same
draw (common random numbers), so a paired comparison of two versions sees only what the
definitions changed. Calibrated so that three such labelers (seeds 1, 2, 3) agree below
40 % on the abstract ``original`` ontology and about 83 % on ``driftlens``
(:func:`expected_agreement`, checked by the tests).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from itertools import combinations

from llm.seeds import stable_int

BASE_SIBLING = 0.28
BASE_CROSS = 0.045
BETA = 3.0
GAMMA = 0.5
DELTA = 2.0
SIGMA = 0.5
SEP_CAP = 4.0
LONG_WORDS = 45
LAMBDA = 0.35
PROSE = 0.3
W_MAX = 1.0

_TOKEN = re.compile(r"[a-z][a-z'-]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "because",
        "but",
        "by",
        "can",
        "for",
        "from",
        "has",
        "have",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "more",
        "not",
        "of",
        "on",
        "or",
        "one",
        "ones",
        "other",
        "over",
        "own",
        "so",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "under",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whose",
        "will",
        "with",
        "without",
        "would",
        "you",
        "your",
        "step",
        "steps",
        "value",
        "values",
        "valuing",
        "concern",
        "concerning",
        "about",
    ]
)
_LEAF_LINE = re.compile(r"^\s+- LEAF (.+?): (.*)$")
_ROOT_LINE = re.compile(r"^ROOT (.+?): ")


def stem(word: str) -> str:
    """A light stem: lower case, a plural ``s`` dropped (``traditions`` -> ``tradition``)."""
    w = word.lower().strip("'-")
    if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    return w


def words(text: str) -> frozenset[str]:
    """Content stems of a text (stop words and words under three letters dropped)."""
    return frozenset(stem(w) for w in _TOKEN.findall(text.lower()) if len(w) > 2) - _STOP


def _term(term: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in _TOKEN.findall(term.lower()))


@dataclass(frozen=True)
class LeafView:
    """What the simulated labeler reads of one leaf: root, prose words, trigger/exclusion terms."""

    name: str
    root: str
    prose: frozenset[str]
    triggers: frozenset[tuple[str, ...]]
    exclusions: frozenset[tuple[str, ...]]
    n_words: int
    #: prose words no other leaf's prose uses (only these separate; shared words only pull)
    distinct: frozenset[str] = frozenset()

    @property
    def vocabulary(self) -> frozenset[str]:
        """Prose words and trigger words together (what ``shared`` compares)."""
        return self.prose | frozenset(w for t in self.triggers for w in t)


def _split_terms(text: str) -> frozenset[tuple[str, ...]]:
    terms = (t.strip().rstrip(".") for t in text.split(","))
    return frozenset(_term(t) for t in terms if _term(t))


def parse_leaf(name: str, root: str, text: str) -> LeafView:
    """Read one ``LEAF`` line of a labeling request (examples are ignored)."""
    text = text.split(' Examples: "', 1)[0]
    text, _, excl = text.partition(" Exclusions: ")
    prose, _, trig = text.partition(" Triggers: ")
    return LeafView(
        name=name,
        root=root,
        prose=words(prose),
        triggers=_split_terms(trig),
        exclusions=_split_terms(excl),
        n_words=len(_TOKEN.findall(f"{prose} {trig} {excl}".lower())),
    )


@cache
def leaves_of_request(ontology_text: str) -> tuple[LeafView, ...]:
    """The leaves of the ONTOLOGY section of a labeling request, in symbol order."""
    out: list[LeafView] = []
    root = ""
    for line in ontology_text.splitlines():
        m = _ROOT_LINE.match(line)
        if m:
            root = m.group(1)
            continue
        m = _LEAF_LINE.match(line)
        if m:
            out.append(parse_leaf(m.group(1), root, m.group(2)))
    seen: dict[str, int] = {}
    for leaf in out:
        for w in leaf.prose:
            seen[w] = seen.get(w, 0) + 1
    return tuple(
        replace(leaf, distinct=frozenset(w for w in leaf.prose if seen[w] == 1)) for leaf in out
    )


def _hits(terms: frozenset[tuple[str, ...]], step: frozenset[str]) -> int:
    return sum(1 for t in terms if all(w in step for w in t))


@cache
def _taste(seed: int, truth: str, other: str) -> float:
    # Directional: one model reads an ambiguous step of T as L, another as T, so two
    # models facing two overlapping definitions resolve them differently.
    z = random.Random(stable_int("sim-definitions-taste", seed, truth, other)).gauss(0.0, 1.0)
    return math.exp(SIGMA * z)


def _long(leaf: LeafView) -> float:
    return max(0, leaf.n_words - LONG_WORDS) / 10.0


def confusion_weight(truth: LeafView, other: LeafView, step: frozenset[str], *, seed: int) -> float:
    """``w(T, L, s)`` of the module docstring for one labeler seed."""
    sep = (
        _hits(truth.triggers - other.triggers, step)
        + _hits(other.exclusions - truth.exclusions, step)
        + PROSE * len(truth.distinct & step)
    )
    pull = (
        _hits(other.triggers - truth.triggers, step)
        + _hits(truth.exclusions - other.exclusions, step)
        + PROSE * len((other.prose - truth.prose) & step)
    )
    union = truth.vocabulary | other.vocabulary
    shared = len(truth.vocabulary & other.vocabulary) / len(union) if union else 0.0
    base = BASE_SIBLING if truth.root == other.root else BASE_CROSS
    exponent = (
        -BETA * min(sep, SEP_CAP)
        + GAMMA * min(pull, SEP_CAP)
        + DELTA * shared
        + LAMBDA * (_long(truth) + _long(other))
    )
    # Another leaf can be as likely as the truth, never likelier: two indistinguishable
    # definitions make a coin flip, not a consistent swap (which labelers would agree on).
    return min(W_MAX, base * _taste(seed, truth.name, other.name) * math.exp(exponent))


def label_distribution(
    step_text: str, truth: str, leaves: Sequence[LeafView], *, seed: int
) -> dict[str, float]:
    """Probability of each leaf for a step of true leaf ``truth`` (truth first)."""
    by_name = {leaf.name: leaf for leaf in leaves}
    if truth not in by_name:
        return {}
    step = words(step_text)
    t = by_name[truth]
    w = {leaf.name: confusion_weight(t, leaf, step, seed=seed) for leaf in leaves if leaf is not t}
    total = 1.0 + sum(w.values())
    return {truth: 1.0 / total, **{k: v / total for k, v in w.items()}}


def draw_label(
    step_text: str,
    truth: str,
    leaves: Sequence[LeafView],
    *,
    seed: int,
    draw_key: tuple[object, ...],
) -> str | None:
    """The simulated label of one step (``None`` when the ontology lacks the true leaf).

    The uniform draw depends on the labeler seed and ``draw_key`` only, never on the
    definitions (common random numbers across ontology versions).
    """
    dist = label_distribution(step_text, truth, leaves, seed=seed)
    if not dist:
        return None
    u = random.Random(stable_int("sim-definitions", seed, *draw_key)).random()
    acc = 0.0
    for leaf, p in dist.items():
        acc += p
        if u < acc:
            return leaf
    return truth


def expected_agreement(
    leaves: Sequence[LeafView],
    sentences: Mapping[str, Sequence[str]],
    *,
    seeds: Sequence[int] = (1, 2, 3),
) -> float:
    """Expected mean pairwise exact agreement of labelers ``seeds`` over every bank sentence.

    Every sentence of every leaf counts once (the simulator draws its steps evenly from
    the bank). This is the calibration target of the docs, computed without sampling.
    """
    scores: list[float] = []
    for truth, texts in sentences.items():
        for text in texts:
            dists = [label_distribution(text, truth, leaves, seed=s) for s in seeds]
            if not dists[0]:
                continue
            pairs = [sum(p[k] * q.get(k, 0.0) for k in p) for p, q in combinations(dists, 2)]
            scores.append(sum(pairs) / len(pairs))
    return sum(scores) / len(scores) if scores else math.nan
