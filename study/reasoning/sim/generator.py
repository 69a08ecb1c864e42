"""The drift simulator: seeded baseline trajectories plus edits with known doses.

For a question the simulator draws a baseline trajectory (3–7 value leaves) that depends
only on the question text and the preset seed. A sample under a memory line then edits
that trajectory: each step is edited with probability *dose* (the memory's effect, known)
and, independently, with probability *model_noise* (sampling variation, present in every
sample including the baseline). The returned :class:`SimResponse` carries the rendered
text and the ground truth, so tests and the calibration know the true drift.
"""

from __future__ import annotations

import random
from collections import Counter

from llm.seeds import stable_int
from llm.sim.presets import EDIT_KINDS, SimPreset
from llm.sim.registry import get_preset
from llm.sim.response import Classifier, SimEdit, SimResponse
from study.reasoning.sim.bank import ANSWER_SENTENCES, LEAF_NAMES, ROOT_OF, STEP_SENTENCES
from study.reasoning.sim.classify import CATEGORY_AFFINITY, default_classify_memory

MAX_STEPS_AFTER_EDITS = 10  # inserts stop here so responses stay a plausible length
#: The ways a response breaks the SPEC §4 format (a preset's ``malformed_rate`` of them).
MALFORMED_KINDS: tuple[str, ...] = (
    "missing_answer_close",
    "numbered_lines",
    "markdown_fence",
    "unclosed_step",
    "empty_step",
)


_Step = tuple[str, int]  # (leaf, sentence index in the bank)


def baseline_steps(question: str, preset: SimPreset) -> list[_Step]:
    """Return the seeded baseline trajectory of a question (leaf, sentence index)."""
    rng = random.Random(stable_int("baseline", preset.seed, question.strip()))
    n = rng.randint(preset.min_steps, preset.max_steps)
    steps: list[_Step] = []
    for _ in range(n):
        # No immediate repeats: real reasoning rarely states the same value twice in a row.
        choices = [leaf for leaf in LEAF_NAMES if not steps or leaf != steps[-1][0]]
        leaf = rng.choice(choices)
        steps.append((leaf, rng.randrange(len(STEP_SENTENCES[leaf]))))
    return steps


def _draw_leaf(
    rng: random.Random, exclude: set[str], affine: tuple[str, ...], affinity: float
) -> str:
    pool = [leaf for leaf in affine if leaf not in exclude]
    if pool and rng.random() < affinity:
        return rng.choice(pool)
    return rng.choice([leaf for leaf in LEAF_NAMES if leaf not in exclude])


def apply_edits(
    steps: list[_Step],
    probability: float,
    rng: random.Random,
    preset: SimPreset,
    affine: tuple[str, ...],
    source: str,
) -> tuple[list[_Step], list[SimEdit]]:
    """Walk the steps and edit each with ``probability`` (kinds drawn by the preset weights).

    Args:
        steps: The trajectory to edit (not modified).
        probability: Per-step edit probability.
        rng: Random source.
        preset: Supplies edit weights and the affinity probability.
        affine: Leaves the condition pulls toward on substitute/insert.
        source: Recorded on every edit (``dose`` or ``model_noise``).

    Returns:
        The edited trajectory and the edits made, in order.
    """
    out = list(steps)
    edits: list[SimEdit] = []
    if probability <= 0.0:
        return out, edits
    weights = preset.edit_weights.as_tuple()
    i = 0
    while i < len(out):
        if rng.random() >= probability:
            i += 1
            continue
        kind = rng.choices(EDIT_KINDS, weights=weights)[0]
        leaf = out[i][0]
        if kind == "delete" and len(out) <= 2:
            kind = "substitute"  # keep at least two steps; a one-step answer is a format break
        if kind == "insert" and len(out) >= MAX_STEPS_AFTER_EDITS:
            kind = "substitute"
        if kind == "reorder":
            j = i + 1 if i + 1 < len(out) else i - 1
            if j < 0 or out[j][0] == leaf:
                kind = "substitute"  # swapping equal leaves would be an invisible edit
            else:
                a = min(i, j)
                before_a = out[a][0]
                out[i], out[j] = out[j], out[i]
                edits.append(SimEdit("reorder", a, before_a, out[a][0], source))
                i = max(i, j) + 1
                continue
        if kind == "substitute":
            new = _draw_leaf(rng, {leaf}, affine, preset.affinity)
            out[i] = (new, rng.randrange(len(STEP_SENTENCES[new])))
            edits.append(SimEdit("substitute", i, leaf, new, source))
            i += 1
        elif kind == "insert":
            new = _draw_leaf(rng, {leaf}, affine, preset.affinity)
            out.insert(i, (new, rng.randrange(len(STEP_SENTENCES[new]))))
            edits.append(SimEdit("insert", i, None, new, source))
            i += 2  # the inserted step and the one it pushed along are both done
        else:  # delete
            out.pop(i)
            edits.append(SimEdit("delete", i, leaf, None, source))
    return out, edits


def render(steps: list[_Step], answer: str) -> str:
    """Render steps and answer in the SPEC §4 structure."""
    body = "".join(
        f"<step_{k}>{STEP_SENTENCES[leaf][idx]}</step_{k}>"
        for k, (leaf, idx) in enumerate(steps, start=1)
    )
    return f"<think>{body}</think><answer>{answer}</answer>"


def malform(
    kind: str, steps: list[_Step], answer: str, rng: random.Random
) -> tuple[str, list[str]]:
    """Render a response that breaks the format the way real models do.

    Args:
        kind: One of :data:`MALFORMED_KINDS`.
        steps: The trajectory.
        answer: The answer sentence.
        rng: Picks which step an ``unclosed_step`` or ``empty_step`` hits.

    Returns:
        The text and the leaves still expressed in it.
    """
    leaves = [leaf for leaf, _ in steps]
    sentences = [STEP_SENTENCES[leaf][idx] for leaf, idx in steps]
    if kind == "missing_answer_close":
        return render(steps, answer)[: -len("</answer>")], leaves
    if kind == "numbered_lines":
        lines = "\n".join(f"{k}. {s}" for k, s in enumerate(sentences, start=1))
        return f"{lines}\n\nAnswer: {answer}", leaves
    if kind == "markdown_fence":
        return f"```xml\n{render(steps, answer)}\n```", leaves
    k = rng.randrange(len(steps)) + 1
    if kind == "unclosed_step":
        return render(steps, answer).replace(f"</step_{k}>", "", 1), leaves
    if kind == "empty_step":
        text = render(steps, answer).replace(
            f"<step_{k}>{sentences[k - 1]}</step_{k}>", f"<step_{k}></step_{k}>", 1
        )
        return text, leaves[: k - 1] + leaves[k:]
    raise ValueError(f"unknown malformed kind {kind!r}")


def _answer(steps: list[_Step], rng: random.Random) -> str:
    roots = Counter(ROOT_OF[leaf] for leaf, _ in steps)
    # Ties go to the root that appears first, as a model concludes from its opening line.
    first = {ROOT_OF[leaf]: n for n, (leaf, _) in reversed(list(enumerate(steps)))}
    root = max(roots, key=lambda r: (roots[r], -first[r]))
    return rng.choice(ANSWER_SENTENCES[root])


def simulate(
    question: str,
    memory_line: str,
    *,
    preset: SimPreset | str = "default",
    sample_index: int = 0,
    seed: int | None = None,
    classify_memory: Classifier | None = None,
) -> SimResponse:
    """Simulate one response with known drift (pure: same inputs, same output).

    Only the seed and the sample index of a request's sampling reach the simulator;
    temperature, top-p and the rest do not change what it writes (its variation between
    samples is the preset's ``model_noise``).

    Args:
        question: The question text.
        memory_line: The memory line before it (``""`` for the baseline).
        preset: A preset or its name.
        sample_index: Repeated-sample index; changes edits and noise, never the baseline.
        seed: The request's sampling seed (``None`` counts as its own value).
        classify_memory: Maps the memory line to ``(condition_class, category)``; the
            default is :func:`~study.reasoning.sim.classify.default_classify_memory`.

    Returns:
        The response text with its ground truth.
    """
    p = get_preset(preset) if isinstance(preset, str) else preset
    classify = classify_memory or default_classify_memory
    cls, category = ("baseline", None) if memory_line == "" else classify(memory_line)
    dose = p.dose(cls, category)
    affine = CATEGORY_AFFINITY.get(category or "", ())
    base = baseline_steps(question, p)
    # Separate streams per concern, so changing one knob (say model_noise) leaves the
    # other draws (dose edits, format breaks) of the same request unchanged.
    key = (p.seed, question.strip(), memory_line, sample_index, seed)
    dosed, edits = apply_edits(
        base, dose, random.Random(stable_int("dose", *key)), p, affine, "dose"
    )
    final, noise_edits = apply_edits(
        dosed, p.model_noise, random.Random(stable_int("noise", *key)), p, (), "model_noise"
    )
    answer = _answer(final, random.Random(stable_int("answer", *key)))
    mal_rng = random.Random(stable_int("malformed", *key))
    malformed: str | None = None
    if p.malformed_rate > 0 and mal_rng.random() < p.malformed_rate:
        malformed = mal_rng.choice(MALFORMED_KINDS)
        text, leaves = malform(malformed, final, answer, mal_rng)
    else:
        text, leaves = render(final, answer), [leaf for leaf, _ in final]
    return SimResponse(
        text=text,
        leaves=tuple(leaves),
        edits=tuple(edits),
        noise_edits=tuple(noise_edits),
        baseline_leaves=tuple(leaf for leaf, _ in base),
        condition_class=cls,
        category=category,
        dose=dose,
        malformed=malformed,
        model=f"sim/{p.name}",
    )
