"""The assertions context family: 13 variants rendered, read back, worded the same per source."""

from __future__ import annotations

import pytest

from driftlens_core.source_reliance import VARIANTS, parse_variant
from study.catalog.assertions import (
    INSTRUCTIONS,
    AssertionContext,
    parse_assertion,
    question_block,
    system_prompt,
)
from study.catalog.contexts import CONTEXT_FAMILIES, ContextFamily
from study.sources.items import shipped_items

ITEMS = shipped_items()


@pytest.mark.parametrize("tier", [1, 2])
@pytest.mark.parametrize("vocabulary", ["ours", "paper"])
def test_every_variant_renders_and_reads_back(tier: int, vocabulary: str) -> None:
    for item in ITEMS[::7]:
        gold = item.answer_index
        wrong = (gold + 1) % len(item.choices)
        for v in VARIANTS:
            ctx = AssertionContext(
                v,
                item.choices[gold],
                item.choices[wrong],
                tier=tier,
                vocabulary=vocabulary,
                kind="arithmetic" if item.dataset == "arithmetic" else "commonsense",
                claim="what most people pick in this case is [answer]",
            )
            assert isinstance(ctx, ContextFamily) and ctx.family in CONTEXT_FAMILIES
            r = ctx.render(
                system=system_prompt(),
                user_text=question_block(item.question, item.choices),
                seed=3,
            )
            assert r.condition == v
            lines = r.messages[-1].content.split("\n")
            spec = parse_variant(v)
            said = [parse_assertion(ln, item.choices) for ln in lines[: len(spec.order)]]
            expected = [
                (
                    "user" if s == "u" else "doc",
                    gold if (spec.user if s == "u" else spec.doc) else wrong,
                )
                for s in spec.order
            ]
            assert said == expected, (v, lines)
            assert lines[len(spec.order)].startswith("Question: ")


def test_a_source_is_worded_the_same_in_every_variant() -> None:
    item = ITEMS[0]

    def user_line(v: str) -> str:
        ctx = AssertionContext(v, "refrigerator", "oven")
        r = ctx.render(system=None, user_text="Q", seed=11)
        prov = r.provenance["assertions"]
        lines = r.messages[0].content.split("\n")
        return next(ln for ln, p in zip(lines, prov, strict=False) if p["source"] == "user")

    assert item.question
    base = user_line("u+").replace("refrigerator", "X")
    for v in ("u+d-", "d+u+", "d-u+"):
        assert user_line(v).replace("refrigerator", "X") == base
    assert user_line("u-").replace("oven", "X") == base


def test_render_is_deterministic_and_bare_has_no_assertion() -> None:
    a = AssertionContext("d-u+", "bank", "mall").render(system="s", user_text="Q", seed=5)
    b = AssertionContext("d-u+", "bank", "mall").render(system="s", user_text="Q", seed=5)
    assert a == b and a.seed == 5
    bare = AssertionContext("bare", "bank").render(system="s", user_text="Q", seed=5)
    assert bare.messages[-1].content == "Q" and bare.seed is None


def test_system_instruction_variants() -> None:
    texts = {k: system_prompt(k) for k in INSTRUCTIONS}
    assert len(set(texts.values())) == 4
    assert all(t.startswith(texts["n"]) for t in texts.values())
    with pytest.raises(ValueError, match="unknown instruction"):
        system_prompt("x")


def test_tier2_needs_a_claim_and_wrong_needs_an_answer() -> None:
    with pytest.raises(ValueError, match="placeholder"):
        AssertionContext("u+", "bank", tier=2).render(system=None, user_text="Q", seed=1)
    with pytest.raises(ValueError, match="fixed wrong answer"):
        AssertionContext("u-", "bank").render(system=None, user_text="Q", seed=1)


def test_parse_assertion_prefers_the_longest_option() -> None:
    line = "Based on my working, the total comes to 100 apples."
    assert parse_assertion(line, ["10", "100", "1000"]) == ("user", 1)
    assert parse_assertion("Nothing to see here.", ["a", "b"]) is None
