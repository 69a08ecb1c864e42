"""The simulator's labeler: a simulated model that answers the studio's requests.

The drift simulator renders every step from a bank of sentences whose leaf is known
(reasoning drift's, registered with :func:`llm.sim.registry.register_step_bank`), so a
labeler that looks a step up in that bank knows its true leaf.
:class:`SimStudioBackend` is a chat backend (the :class:`llm.types.ChatBackend` protocol)
that recognises the studio's requests by the marker in their system message and answers:

* **labeling requests** with the true leaf of every step, except that for each configured
  leaf pair (A, B) a step whose true leaf is A is labeled B (and B labeled A) with the
  configured rate, drawn per step from a seeded stream; with ``bad`` > 0 an attempt is
  answered in a broken format with that probability (to exercise repair and the
  ``unparseable`` path);
* **rewrite requests** by assigning each example step to its true leaf and adding the words
  that separate the two sides to each definition's triggers and exclusions;
* **paraphrase requests** by restating the definition's sentences in reverse order with a
  few synonyms, leaving its triggers and exclusions as they are.

The labeler goes through exactly the same prompt building, caching and strict parsing as
an ``llm:`` labeler: it *is* :class:`ontology.labelers.llm.LLMLabeler` with this backend.

Spec grammar (options separated by ``;``)::

    sim                                   perfect labeler
    sim:confuse=3~4@0.3;seed=7            confuse leaves 3 and 4 at rate 0.3
    sim:confuse=3~4@0.3+5~6@0.1;bad=0.2   two pairs, and broken answers at rate 0.2
    llm:sim/default;confuse=3~4@0.3       the same, named as an llm labeler
    sim:definitions;seed=1                confusions that follow the definitions sent
                                          (:mod:`ontology.labelers.sim_definitions`)

Rewrite requests are answered by ``sim/default`` and ``sim/rewriter-operational`` as above,
and by ``sim/rewriter-blur`` / ``sim/rewriter-append`` as
:mod:`ontology.labelers.sim_rewriters` describes.

Leaves are given by symbol (1..11, in SPEC §5 order) or by exact name.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from llm.seeds import stable_int
from llm.sim.backend import InProcessBackend
from llm.sim.registry import step_bank
from llm.types import ChatRequest, ChatResult
from ontology.parsing import label_answer_json
from ontology.prompts import (
    LABELING_MARKER,
    PARAPHRASE_MARKER,
    RETRY_MARKER,
    REWRITE_MARKER,
    passage_steps,
)
from ontology.schema import UNMAPPED
from storage.errors import ConfigError

SIM_MODEL = "sim/labeler"
_NUMBERING = re.compile(r"^\s*(?:step\s*)?\d+[.):]\s*", re.IGNORECASE)


class Confusion(BaseModel):
    """Steps of leaf ``a`` are labeled ``b`` (and ``b`` labeled ``a``) with ``rate``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    a: str
    b: str
    rate: float = Field(ge=0.0, le=1.0)


class SimLabelConfig(BaseModel):
    """How the simulated labeler errs; part of its stored spec and of the cache scope."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    #: ``fixed``: the configured confusions; ``definitions``: confusions that follow the
    #: definitions sent (:mod:`ontology.labelers.sim_definitions`)
    mode: str = "fixed"
    confusions: tuple[Confusion, ...] = ()
    seed: int = 0
    bad: float = Field(0.0, ge=0.0, le=1.0)

    def canonical(self) -> str:
        """A short stable text of the configuration (goes into the cache scope)."""
        pairs = "+".join(f"{c.a}~{c.b}@{c.rate:g}" for c in self.confusions)
        head = f"confuse={pairs};" if pairs else ""
        if self.mode == "definitions":
            head = f"definitions;{head}"
        return f"{head}seed={self.seed};bad={self.bad:g}"


def resolve_leaf(ref: str) -> str:
    """A leaf given by symbol number (SPEC §5 order) or by exact name."""
    ref = ref.strip()
    leaf_names = step_bank()[0]
    if ref.isdigit():
        k = int(ref)
        if not 1 <= k <= len(leaf_names):
            raise ConfigError(f"leaf symbol {k} is outside 1..{len(leaf_names)}")
        return leaf_names[k - 1]
    for name in leaf_names:
        if name.lower() == ref.lower():
            return name
    raise ConfigError(f"unknown leaf {ref!r} in a sim labeler spec")


def parse_sim_options(options: str) -> SimLabelConfig:
    """Parse ``confuse=A~B@R[+C~D@R];seed=S;bad=R`` (every part optional).

    Raises:
        ConfigError: a malformed option.
    """
    confusions: list[Confusion] = []
    seed, bad, mode = 0, 0.0, "fixed"
    for part in (p.strip() for p in options.split(";") if p.strip()):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        try:
            if key == "definitions" and not sep:
                mode = "definitions"
            elif key == "confuse" and sep:
                for item in value.split("+"):
                    pair, _, rate = item.partition("@")
                    a, tilde, b = pair.partition("~")
                    if not tilde or not rate:
                        raise ValueError(item)
                    la, lb = resolve_leaf(a), resolve_leaf(b)
                    if la == lb:
                        raise ConfigError("a confused pair needs two different leaves")
                    confusions.append(Confusion(a=la, b=lb, rate=float(rate)))
            elif key == "seed" and sep:
                seed = int(value)
            elif key == "bad" and sep:
                bad = float(value)
            elif key in ("t", "temperature"):
                continue  # the simulated labeler's randomness is its seeded confusion
            else:
                raise ValueError(part)
        except ConfigError:
            raise
        except ValueError:
            raise ConfigError(
                f"bad sim labeler option {part!r}; use definitions, confuse=A~B@RATE, seed=N "
                "or bad=RATE"
            ) from None
    if mode == "definitions" and confusions:
        raise ConfigError(
            "sim:definitions takes its confusions from the definitions; drop confuse="
        )
    try:
        return SimLabelConfig(mode=mode, confusions=tuple(confusions), seed=seed, bad=bad)
    except ValueError as exc:
        raise ConfigError(f"bad sim labeler options {options!r}: {exc}") from None


def _normalise(text: str) -> str:
    return " ".join(_NUMBERING.sub("", text).split()).lower()


@cache
def _truth_table() -> dict[str, str]:
    sentences_by_leaf = step_bank()[1]
    return {_normalise(s): leaf for leaf, sentences in sentences_by_leaf.items() for s in sentences}


def true_leaf(step: str) -> str | None:
    """The leaf a simulated step was rendered from, or ``None`` for text not from the bank."""
    return _truth_table().get(_normalise(step))


def _ontology_leaves(user: str) -> dict[str, str]:
    """Leaf -> root as listed in the ONTOLOGY section of a labeling request."""
    out: dict[str, str] = {}
    root = ""
    for line in user.split("\n\nPASSAGE\n", 1)[0].splitlines():
        m = re.match(r"^ROOT (.+?): ", line)
        if m:
            root = m.group(1)
            continue
        m = re.match(r"^\s+- LEAF (.+?): ", line)
        if m:
            out[m.group(1)] = root
    return out


def sim_label(
    step: str, *, config: SimLabelConfig, draw_key: tuple[object, ...]
) -> tuple[str, bool]:
    """The simulated label of one step and whether the injected confusion changed it.

    Args:
        step: The step text.
        config: The confusion configuration.
        draw_key: Makes the per-step random draw (stable across runs).

    Returns:
        ``(leaf or "unmapped", confused)``.
    """
    truth = true_leaf(step)
    if truth is None:
        return UNMAPPED, False
    for c in config.confusions:
        if truth in (c.a, c.b):
            rng = random.Random(stable_int("sim-confuse", config.seed, c.a, c.b, *draw_key))
            if rng.random() < c.rate:
                return (c.b if truth == c.a else c.a), True
            break
    return truth, False


_WORD = re.compile(r"[a-z][a-z'-]{4,}")
_STOP = frozenset(
    [
        "about",
        "above",
        "after",
        "again",
        "against",
        "because",
        "before",
        "being",
        "below",
        "between",
        "could",
        "doing",
        "during",
        "either",
        "every",
        "further",
        "having",
        "other",
        "their",
        "there",
        "these",
        "those",
        "through",
        "under",
        "until",
        "which",
        "while",
        "would",
        "should",
        "rather",
        "where",
        "whether",
        "without",
        "something",
        "someone",
        "makes",
        "matter",
        "matters",
        "choice",
        "option",
        "decision",
        "people",
        "worth",
    ]
)
_SYNONYMS = (
    ("step", "reasoning step"),
    ("names", "mentions"),
    ("contains no", "has no"),
    ("about", "concerning"),
    ("people", "persons"),
)


class SimStudioBackend(InProcessBackend):
    """In-process simulated model for labeling, rewrite and paraphrase requests.

    Args:
        config: How labels err.
    """

    def __init__(
        self, config: SimLabelConfig | None = None, *, rewriter: str = "operational"
    ) -> None:
        self.config = config or SimLabelConfig(bad=0.0)
        self.rewriter = rewriter
        self.spec = SIM_MODEL

    def endpoint(self) -> str:
        """The configuration is part of the endpoint, hence of every cache key."""
        tail = "" if self.rewriter == "operational" else f";rewriter={self.rewriter}"
        return f"sim-studio:in-process@v{self.config.version};{self.config.canonical()}{tail}"

    # ---------------------------------------------------------------- answering

    def _label(self, messages: Sequence[tuple[str, str]], request: ChatRequest) -> str:
        user = next(c for r, c in messages if r == "user")
        attempt = sum(1 for r, _ in messages if r == "assistant")
        steps = passage_steps(user)
        passage = "\n".join(t for _, t in steps)
        base = (request.sampling.seed, request.sample_index, passage)
        structured = request.response_format is not None
        # constrained decoding (a structured request) never cuts the syntax
        if self.config.bad > 0 and not structured:
            rng = random.Random(stable_int("sim-bad", self.config.seed, *base, attempt))
            if rng.random() < self.config.bad:
                return '<answer>[{"step_index": 1, "category": '  # cut off mid-array
        leaves = _ontology_leaves(user)
        views = None
        if self.config.mode == "definitions":
            from ontology.labelers.sim_definitions import draw_label, leaves_of_request

            views = leaves_of_request(user.split("\n\nPASSAGE\n", 1)[0])
        items = []
        chosen: dict[int, tuple[str, str]] = {}
        for n, text in steps:
            if views is not None:
                truth = true_leaf(text)
                drawn = None
                if truth is not None:
                    drawn = draw_label(
                        text, truth, views, seed=self.config.seed, draw_key=(*base, n)
                    )
                leaf = drawn or UNMAPPED
            else:
                leaf, _ = sim_label(text, config=self.config, draw_key=(*base, n))
            if leaf not in leaves:
                leaf = UNMAPPED
            root = leaves.get(leaf, UNMAPPED)
            items.append({"step_index": n, "category": root, "symbol": leaf})
            chosen[n] = (root, leaf)
        if structured:
            return label_answer_json(chosen)
        return f"<answer>{json.dumps(items)}</answer>"

    @staticmethod
    def _definitions(user: str) -> dict[int, str]:
        return {
            int(m.group(1)): m.group(2).strip()
            for m in re.finditer(
                r"CURRENT DEFINITION (\d):\n(.*?)\nEND DEFINITION \1", user, re.DOTALL
            )
        }

    def _rewrite(self, user: str, *, retry: bool = False) -> str:
        if self.rewriter != "operational":
            from ontology.labelers.sim_rewriters import rewrite_as

            return rewrite_as(self.rewriter, user, self._definitions(user), truth=true_leaf)
        names = dict(re.findall(r"^LEAF (\d): (.+)$", user, re.MULTILINE))
        defs = self._definitions(user)
        region = user.split("UNDER LEAF 2\n", 1)[-1].split("\n\nTASK\n", 1)[0]
        words: dict[str, Counter[str]] = {"1": Counter(), "2": Counter()}
        for line in region.splitlines():
            text = re.sub(r"^\d+\.\s*", "", line)
            truth = true_leaf(text)
            for side in ("1", "2"):
                if truth is not None and truth == names.get(side, "").strip():
                    # sorted: most_common breaks ties by insertion order, and a set's
                    # order changes with the process's string hash seed
                    words[side].update(sorted(set(_WORD.findall(text.lower())) - _STOP))
        out = []
        for side, other in (("1", "2"), ("2", "1")):
            # A second try (after a gate's rejection) adds more of the separating words.
            n_own, n_theirs = (14, 8) if retry else (8, 4)
            own = [w for w, _ in words[side].most_common() if w not in words[other]][:n_own]
            theirs = [w for w, _ in words[other].most_common() if w not in words[side]][:n_theirs]
            out.append(self._extend(defs.get(int(side), ""), own, theirs))
        return f"<def1>{out[0]}</def1>\n<def2>{out[1]}</def2>"

    @staticmethod
    def _extend(block: str, triggers: list[str], exclusions: list[str]) -> str:
        from ontology.parsing import split_definition

        prose, old_t, old_x = split_definition(block)
        t = list(dict.fromkeys([*(old_t or ()), *triggers]))
        x = [w for w in dict.fromkeys([*(old_x or ()), *exclusions]) if w not in t]
        lines = [prose]
        if t:
            lines.append(f"Triggers: {', '.join(t)}")
        if x:
            lines.append(f"Exclusions: {', '.join(x)}")
        return "\n".join(lines)

    def _paraphrase(self, user: str) -> str:
        from ontology.parsing import split_definition

        block = self._definitions(user).get(1, "")
        prose, t, x = split_definition(block)
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", prose) if s]
        text = " ".join(reversed(sentences))
        for old, new in _SYNONYMS:
            text = re.sub(rf"\b{re.escape(old)}\b", new, text)
        lines = [text]
        if t:
            lines.append(f"Triggers: {', '.join(t)}")
        if x:
            lines.append(f"Exclusions: {', '.join(x)}")
        return "<def1>" + "\n".join(lines) + "</def1>"

    def answer(self, request: ChatRequest) -> ChatResult:
        """Answer one request synchronously."""
        start = time.perf_counter()
        messages = [(m.role, m.content) for m in request.messages]
        system = next((c for r, c in messages if r == "system"), "")
        user = next((c for r, c in messages if r == "user"), "")
        if system.startswith(LABELING_MARKER):
            text, error = self._label(messages, request), None
        elif system.startswith(REWRITE_MARKER):
            retry = any(r == "user" and c.startswith(RETRY_MARKER) for r, c in messages)
            text, error = self._rewrite(user, retry=retry), None
        elif system.startswith(PARAPHRASE_MARKER):
            text, error = self._paraphrase(user), None
        else:
            text, error = None, "the simulated studio model only answers studio requests"
        return self.result(
            request,
            text,
            started=start,
            seed=request.sampling.seed,
            finish_reason="stop" if text is not None else None,
            error=error,
        )


def answer_studio_messages(
    messages: Sequence[tuple[str, str]],
    *,
    seed: int | None = None,
    sample_index: int = 0,
    config: SimLabelConfig | None = None,
) -> str | None:
    """The simulated answer to a studio request, or ``None`` for any other conversation.

    This is the hook for the HTTP simulator (``SimServer``): when a chat's system message
    starts with a studio marker, answer it with this instead of a generated response.

    Args:
        messages: ``(role, content)`` pairs.
        seed: The request's sampling seed.
        sample_index: The repeated-sample index (``n`` position).
        config: How labels err (default: a perfect labeler).
    """
    system = next((c for r, c in messages if r == "system"), "")
    if not system.startswith((LABELING_MARKER, REWRITE_MARKER, PARAPHRASE_MARKER)):
        return None
    from llm.types import ChatMessage, SamplingParams

    request = ChatRequest(
        messages=tuple(ChatMessage(role=r, content=c) for r, c in messages),
        sampling=SamplingParams(seed=seed),
        sample_index=sample_index,
    )
    return SimStudioBackend(config).answer(request).text


def studio_answerer(
    config: SimLabelConfig | None = None,
) -> Callable[[Sequence[tuple[str, str]], int | None, int], str | None]:
    """An answerer for a simulator server (:data:`llm.sim.tasks.Answerer`).

    Pass it to ``SimServer(answerers=...)``/``serve(answerers=...)`` so that a *served*
    simulator answers the studio's labeling, rewrite and paraphrase requests like the
    in-process ``sim`` labeler (``config`` sets how labels err; default: perfect).
    """

    def answer(messages: Sequence[tuple[str, str]], seed: int | None, index: int) -> str | None:
        return answer_studio_messages(messages, seed=seed, sample_index=index, config=config)

    return answer
