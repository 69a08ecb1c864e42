"""Bank JSONL: the shipped sample imports; bad lines are rejected with their line number."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from study.catalog.contexts import ContextFamily
from study.catalog.memory_bank import MemoryBankContext, bank_condition
from study.conflicts.items import (
    leakage,
    load_sample_banks,
    memory_problems,
    parse_banks,
    sample_banks_path,
)


def _lines() -> list[dict]:
    return [json.loads(x) for x in sample_banks_path().read_text().splitlines() if x.strip()]


def _write(tmp_path: Path, rows: list[dict]) -> Path:
    p = tmp_path / "banks.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_sample_has_six_personas_three_types_and_six_high_risk() -> None:
    banks = load_sample_banks()
    assert len(banks) == 42
    assert len({b.persona_id for b in banks}) == 6
    for t in ("CPC", "BOC", "SCC"):
        for p in {b.persona_id for b in banks}:
            assert sum(b.type == t and b.persona_id == p and not b.high_risk for b in banks) == 2
    assert sum(b.high_risk for b in banks) == 6 and all(
        b.type == "SCC" for b in banks if b.high_risk
    )


def test_import_sample_is_idempotent(cli: Callable[..., Result]) -> None:
    first = cli("conflicts", "import", "--sample")
    assert first.exit_code == 0, first.output
    assert "42 new" in first.output
    again = cli("conflicts", "import", "--sample")
    assert "42 unchanged" in again.output


@pytest.mark.parametrize(
    ("mutate", "expect"),
    [
        (lambda r: r["distractors"].pop(), "5 distractors"),
        (lambda r: r["core_memories"].__setitem__(1, " ".join(["word"] * 40)), "40 words"),
        (
            lambda r: r["core_memories"].__setitem__(
                0, r["core_memories"][0].rstrip(".") + " on 2025-03-14."
            ),
            "timestamp",
        ),
        (
            lambda r: r["background_memories"].__setitem__(
                0, "Source: chat 12. " + r["background_memories"][0]
            ),
            "source label",
        ),
        (
            lambda r: r.__setitem__("query", "Given my conflicting habits, what should I do?"),
            "'conflicting'",
        ),
    ],
)
def test_bad_line_is_rejected_with_its_line_number(
    cli: Callable[..., Result], tmp_path: Path, mutate: Callable[[dict], object], expect: str
) -> None:
    rows = _lines()[:5]
    mutate(rows[3])
    path = _write(tmp_path, rows)
    res = cli("conflicts", "import", str(path))
    assert res.exit_code != 0
    msg = str(res.exception)
    assert "line 4:" in msg and expect in msg, msg


def test_all_problems_are_listed_by_line() -> None:
    rows = _lines()[:3]
    rows[0]["distractors"] = rows[0]["distractors"][:5]
    rows[2]["query"] = "My memories contradict each other; help?"
    text = "".join(json.dumps(r) + "\n" for r in rows) + "{not json\n"
    parsed = parse_banks(text)
    assert [p.line for p in parsed.problems] == [1, 3, 4]
    assert len(parsed.instances) == 1


def test_memory_style_checks() -> None:
    ok = (
        "Dana batch-cooks large vegetable curries on her days off and portions them into "
        "containers for the week ahead."
    )
    assert memory_problems(ok) == []
    assert any("third person" in p for p in memory_problems(ok.replace("Dana", "I")))
    assert any(
        "timestamp" in p for p in memory_problems(ok.replace("days off", "days off at 14:30"))
    )
    assert leakage("Should I go running lately?", "BOC") == ["lately"]
    assert leakage("Should I go running lately?", "CPC") == []


def test_memory_bank_context_shuffles_reproducibly() -> None:
    inst = load_sample_banks()[0]
    ctx = MemoryBankContext(
        bank_condition(3),
        core=inst.core_memories,
        background=inst.background_memories,
        distractors=inst.distractors[:3],
    )
    assert isinstance(ctx, ContextFamily)
    a = ctx.render(system="sys", user_text=inst.query, seed=11)
    b = ctx.render(system="sys", user_text=inst.query, seed=11)
    c = ctx.render(system="sys", user_text=inst.query, seed=12)
    assert a == b and a.messages != c.messages and a.seed == 11
    user = a.messages[-1].content
    assert user.endswith(inst.query)
    assert sum(line.startswith("- ") for line in user.splitlines()) == 7 + 3
    provs = [o["provenance"] for o in a.provenance["order"]]
    assert provs.count("distractor") == 3 and provs.count("background") == 1
    # provenance is never rendered
    assert "distractor" not in user and "core" not in user
