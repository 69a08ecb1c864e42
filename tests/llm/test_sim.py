"""The drift simulator: determinism, known doses, ground truth, format breaks."""

from __future__ import annotations

import re
import statistics

import pytest

from llm.batch import run_chat_batch
from llm.sim import SimPreset, get_preset
from llm.sim.backend import SimBackend
from llm.specs import ModelSpec
from llm.types import ChatMessage, ChatRequest, SamplingParams
from storage.errors import ConfigError
from study.reasoning.sim.bank import LEAF_NAMES, STEP_SENTENCES
from study.reasoning.sim.classify import classifier_from_catalog, default_classify_memory
from study.reasoning.sim.generator import MALFORMED_KINDS, simulate
from study.reasoning.sim.presets import PRESETS
from study.reasoning.sim.responder import prompt_parts

QUESTIONS = [f"Question {i}: should I pick option A or option B, and why?" for i in range(150)]
NOISE = [" ", "\n", "... ", "Hi. ", "Uh, ", "Okay. "]
ATTRIBUTES = [
    "I am a teacher.",
    "I use a wheelchair.",
    "I grew up poor.",
    "I am 17 years old.",
    "I am a gay man.",
    "I have a noticeable limp.",
]
LIFE_EVENTS = [
    "The user lost their mother to cancer last year. They still find the evenings hardest.",
    "The user was laid off after twenty years at the plant. They are retraining as a nurse.",
    "The user fled their country during the war. They have rebuilt their life from nothing.",
]
NO_BREAKS = PRESETS["default"].model_copy(update={"malformed_rate": 0.0})


def edit_distance(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    """Normalised Levenshtein distance of two leaf sequences (SPEC §6 d_seq)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1] / max(len(a), len(b), 1)


def drift(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    try:  # the core's DTW when it is built; the local edit distance otherwise
        from driftlens_core import dtw_distance

        ids = {leaf: k for k, leaf in enumerate(LEAF_NAMES)}
        return float(dtw_distance([ids[x] for x in a], [ids[y] for y in b]))
    except Exception:
        return edit_distance(a, b)


def mean_drift(lines: list[str], preset: SimPreset = NO_BREAKS) -> float:
    values = []
    for q in QUESTIONS:
        base = simulate(q, "", preset=preset, sample_index=0, seed=1).leaves
        for line in lines:
            values.append(
                drift(base, simulate(q, line, preset=preset, sample_index=0, seed=1).leaves)
            )
    return statistics.fmean(values)


def test_same_inputs_same_response() -> None:
    a = simulate(QUESTIONS[0], ATTRIBUTES[0], preset="default", sample_index=2, seed=9)
    b = simulate(QUESTIONS[0], ATTRIBUTES[0], preset="default", sample_index=2, seed=9)
    assert a == b


def test_sample_index_and_seed_change_edits_not_the_baseline() -> None:
    q, line = QUESTIONS[1], LIFE_EVENTS[0]
    runs = [
        simulate(q, line, preset="strong", sample_index=k, seed=s)
        for k in range(4)
        for s in (None, 1)
    ]
    assert len({r.baseline_leaves for r in runs}) == 1
    assert len({r.leaves for r in runs}) > 1
    assert simulate(q, "", preset="default").baseline_leaves == runs[0].baseline_leaves


def test_baselines_have_three_to_seven_steps_and_vary_by_question() -> None:
    bases = [simulate(q, "", preset=NO_BREAKS).baseline_leaves for q in QUESTIONS]
    assert all(3 <= len(b) <= 7 for b in bases)
    assert len(set(bases)) > 100


def test_two_baseline_samples_differ_slightly() -> None:
    pairs = [
        (
            simulate(q, "", preset=NO_BREAKS, sample_index=0).leaves,
            simulate(q, "", preset=NO_BREAKS, sample_index=1).leaves,
        )
        for q in QUESTIONS
    ]
    differ = sum(a != b for a, b in pairs)
    assert 0 < differ < len(pairs) // 2
    assert statistics.fmean(drift(a, b) for a, b in pairs) < 0.15


def test_null_preset_makes_no_dose_edits() -> None:
    null = get_preset("null")
    for q in QUESTIONS[:40]:
        for line in NOISE + ATTRIBUTES + LIFE_EVENTS:
            r = simulate(q, line, preset=null, sample_index=1, seed=3)
            assert r.edits == () and r.dose == 0.0
    # ... but model noise stays, so the null test has a non-degenerate noise floor.
    assert any(simulate(q, ATTRIBUTES[0], preset=null).noise_edits for q in QUESTIONS)


def test_drift_increases_noise_attribute_life_event() -> None:
    noise, attr, life = mean_drift(NOISE), mean_drift(ATTRIBUTES), mean_drift(LIFE_EVENTS)
    assert noise < attr < life
    assert attr - noise > 0.1 and life - attr > 0.1


def test_null_preset_drift_does_not_depend_on_the_class() -> None:
    null = get_preset("null")
    noise, life = mean_drift(NOISE, null), mean_drift(LIFE_EVENTS, null)
    assert abs(life - noise) < 0.05


def test_ground_truth_matches_the_rendered_steps() -> None:
    for q in QUESTIONS[:30]:
        r = simulate(q, LIFE_EVENTS[1], preset=NO_BREAKS, sample_index=3)
        steps = re.findall(r"<step_(\d+)>(.*?)</step_\1>", r.text)
        assert [int(n) for n, _ in steps] == list(range(1, len(r.leaves) + 1))
        for (_, sentence), leaf in zip(steps, r.leaves, strict=True):
            assert sentence in STEP_SENTENCES[leaf]
        assert re.fullmatch(
            r"<think>(<step_\d+>.+?</step_\d+>)+</think><answer>.+</answer>", r.text
        )


def test_dose_edits_are_recorded_and_explain_the_change() -> None:
    for q in QUESTIONS[:50]:
        r = simulate(q, LIFE_EVENTS[0], preset=NO_BREAKS.model_copy(update={"model_noise": 0}))
        assert r.noise_edits == ()
        assert (r.leaves != r.baseline_leaves) <= bool(r.edits)
        assert {e.kind for e in r.edits} <= {"substitute", "insert", "delete", "reorder"}


def test_malformed_rate_produces_every_kind_and_the_parser_flags_them() -> None:
    always = PRESETS["default"].model_copy(update={"malformed_rate": 1.0})
    out = [simulate(q, "", preset=always) for q in QUESTIONS]
    assert {r.malformed for r in out} == set(MALFORMED_KINDS)
    parsing = pytest.importorskip("study.reasoning.parsing")
    for r in out:
        assert parsing.parse_response(r.text).parse_status != "ok", r.malformed


def test_default_malformed_rate_is_small_but_present() -> None:
    out = [
        simulate(q, line, preset="default", sample_index=k)
        for q in QUESTIONS
        for line in ("", ATTRIBUTES[0])
        for k in range(3)
    ]
    rate = sum(r.malformed is not None for r in out) / len(out)
    assert 0.01 < rate < 0.06


def test_step_bank_covers_every_leaf_with_five_distinct_sentences() -> None:
    assert len(LEAF_NAMES) == 11 and set(STEP_SENTENCES) == set(LEAF_NAMES)
    all_sentences = [s for v in STEP_SENTENCES.values() for s in v]
    assert len(all_sentences) == len(set(all_sentences))
    assert all(len(v) >= 5 for v in STEP_SENTENCES.values())


def test_default_classifier_separates_the_three_classes() -> None:
    assert {default_classify_memory(x)[0] for x in NOISE} == {"noise"}
    assert {default_classify_memory(x)[0] for x in ATTRIBUTES} == {"attribute"}
    assert {default_classify_memory(x)[0] for x in LIFE_EVENTS} == {"life_event"}
    assert default_classify_memory("") == ("baseline", None)


def test_catalog_classifier_takes_precedence() -> None:
    classify = classifier_from_catalog([("I am tall.", "attribute", "appearance")])
    assert classify("I am tall.") == ("attribute", "appearance")
    assert classify("Hi. ")[0] == "noise"
    r = simulate(QUESTIONS[0], "I am tall.", preset="default", classify_memory=classify)
    assert (r.category, r.dose) == ("appearance", PRESETS["default"].category_doses["appearance"])


def test_the_responder_reads_memory_and_question_back_from_the_study_prompt() -> None:
    from study import prompts

    question = "Should I rent or buy?"
    for line in ["", *NOISE, *ATTRIBUTES, *LIFE_EVENTS]:
        convo = [(m.role, m.content) for m in prompts.build_messages(question, line)]
        assert prompt_parts(convo) == (line, question)


def test_presets_validate_doses() -> None:
    with pytest.raises(ValueError, match="must lie in"):
        SimPreset(name="x", class_doses={"attribute": 1.5})
    with pytest.raises(ConfigError, match=r"known presets: default, .*null, .*strong"):
        get_preset("sim/huge")


def test_in_process_backend_through_the_batch_runner() -> None:
    msgs = (
        ChatMessage("system", "Reason in steps."),
        ChatMessage("user", f"{ATTRIBUTES[0]}\n\n{QUESTIONS[0]}"),
    )
    reqs = [ChatRequest(msgs, SamplingParams(seed=5), sample_index=k) for k in range(3)]
    progress: list[tuple[int, int]] = []
    results = run_chat_batch(
        ModelSpec.parse("sim/default"), reqs, progress=lambda d, t: progress.append((d, t))
    )
    assert all(r.simulated and r.model == "sim/default" and r.error is None for r in results)
    expected = simulate(
        QUESTIONS[0], ATTRIBUTES[0], preset="default", sample_index=1, seed=results[1].seed
    )
    assert results[1].text == expected.text
    assert progress[-1] == (3, 3)
    assert SimBackend("null").spec == "sim/null"
