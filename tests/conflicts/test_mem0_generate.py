"""``conflicts generate --track pipeline --system mem0``: the real Mem0 package reads the
shipped dialogues (its LLM and embedder served by the simulator over HTTP, offline)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest
from click.testing import Result
from sqlmodel import Session

from llm.specs import ModelSpec
from storage.repo.runs import get_run, list_responses, require_run
from study.conflicts.dialogues import read_dialogues
from study.conflicts.items import import_bank_file, load_sample_banks, stored_instances
from study.conflicts.plan import (
    ConflictGenerationOptions,
    build_plan,
    generate_conflicts,
    prompt_hash,
)
from study.conflicts.real_systems import open_real_extractor

needs_mem0 = pytest.mark.skipif(
    importlib.util.find_spec("mem0") is None,
    reason="the mem0 track test needs mem0ai (in the dev extra: scripts/setup.sh dev)",
)
PERCEIVED = ("pull in two directions", "point two ways")


@needs_mem0
def test_mem0_banks_feed_generation_and_a_rerun_renders_the_same_prompts(session: Session) -> None:
    import_bank_file(None, session=session)
    banks = {b.instance_id: b for b in load_sample_banks()}
    dialogues = read_dialogues(None, banks.values()).by_instance
    opts = ConflictGenerationOptions(
        model=ModelSpec.parse("sim/mc-balanced"),
        run="m0",
        doses=(0, 6),
        track="pipeline",
        extractor="mem0",
    )
    first = generate_conflicts(opts, session=session)
    # only the six instances with a dialogue; Mem0 2.x adds both sides: every bank FULL
    assert (first.planned, first.requested, first.failed) == (12, 12, 0)
    assert first.observability == {"FULL": 6}
    run = require_run("m0", session=session)
    assert run.config["memory_system"] == "mem0"
    assert run.config["memory_model"] == "sim/default"
    responses = list_responses(run.id or 0, session=session)
    hashes = {(r.question_id, r.condition): r.request["context"]["prompt_hash"] for r in responses}
    perceived = 0
    for r in responses:
        ctx = r.request["context"]
        d = dialogues[ctx["instance_id"]]
        user_turns = [t for s in d.sessions for t in s.turns if t.role == "user"]
        shown = [o["text"] for o in ctx["order"] if o["provenance"] == "core"]
        # the bank is what Mem0 stored (the simulated extractor copies user lines), not the
        # curated memory records
        assert set(shown) <= {t.text for t in user_turns}
        assert {t.text for t in user_turns if t.states} <= set(shown)
        assert set(shown) - set(banks[ctx["instance_id"]].core_memories)
        assert ctx["observability"] == "FULL"
        perceived += any(p in (r.text or "").lower() for p in PERCEIVED)
    # the responder finds both sides among Mem0's texts (without that it cannot perceive)
    assert perceived >= 6
    # a rerun extracts again: the same banks in the same order, so the same prompts (and
    # every plan key already stored: nothing is sent)
    with open_real_extractor("mem0") as ext:
        plan = build_plan(
            stored_instances(session=session),
            doses=(0, 6),
            samples=1,
            run_seed=int(run.config["run_seed"]),
            track="pipeline",
            extractor=ext,
            dialogues=dialogues,
        )
    assert {(p.question_id, p.condition): prompt_hash(p.rendered) for p in plan} == hashes


def test_mem0_absent_mocked_is_one_sentence(
    cli: Callable[..., Result],
    db: Callable[[], AbstractContextManager[Session]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # None in sys.modules makes `import mem0` fail as if mem0ai were not installed
    monkeypatch.setitem(sys.modules, "mem0", None)
    assert cli("conflicts", "import", "--sample").exit_code == 0
    res = cli(
        "conflicts", "generate", "--model", "sim/mc-balanced", "--run", "nomem0",
        "--track", "pipeline", "--system", "mem0",
    )  # fmt: skip
    assert res.exit_code != 0
    assert "pip install mem0ai" in str(res.exception)
    with db() as s:  # refused before the run was created
        assert get_run("nomem0", session=s) is None
