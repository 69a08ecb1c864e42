"""Every run command says its plan's size before it builds it (issue 23 item 9).

``Plan: <how the size comes about> = N requests`` is printed before the first request, so a
plan far larger than meant can be stopped at once; the line's N is the plan's own count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from tests.limits.conftest import Outcome
from tests.limits.test_failed_runs import _small_batteries

PLAN = re.compile(r"^Plan: (?P<what>.+) = (?P<n>[\d,]+) requests$", re.M)


def _plan(out: str) -> tuple[str, int]:
    """The one plan line of ``out``, and that it comes before everything else printed."""
    found = PLAN.findall(out)
    assert len(found) == 1, out
    assert out.lstrip().startswith("Plan: "), out
    what, n = found[0]
    return what, int(n.replace(",", ""))


def test_generate_prints_its_plan_first_and_keeps_json_on_stdout_alone(
    workspace: object, tmp_path: Path, run_main: Callable[..., Outcome]
) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"q{i}", "text": f"What is {i} + 1?"}) + "\n" for i in range(3)),
        encoding="utf-8",
    )
    assert run_main("questions", "import", str(path)).code == 0
    args = ("generate", "--model", "sim/default", "--perturbations", "none", "--samples", "2")
    res = run_main(*args, "--run", "g")
    assert res.code == 0, res
    assert _plan(res.out) == ("3 questions x 1 conditions x 2 samples", 6)
    # with --json the line goes to stderr: stdout parses as JSON
    res = run_main(*args, "--run", "g2", "--json")
    assert res.code == 0, res
    json.loads(res.out)
    assert _plan(res.err)[1] == 6


def test_conflicts_generate_prints_its_plan_first(
    workspace: object, run_main: Callable[..., Outcome]
) -> None:
    assert run_main("conflicts", "import", "--sample").code == 0
    res = run_main(
        "conflicts", "generate", "--model", "sim/mc-balanced", "--run", "c", "--distractors", "0,6"
    )
    assert res.code == 0, res
    assert _plan(res.out) == ("42 banks x 2 doses x 1 samples", 84)
    assert "84 planned" in res.out


def test_disposition_run_prints_its_plan_first(
    workspace: object, tmp_path: Path, run_main: Callable[..., Outcome]
) -> None:
    batteries = _small_batteries(tmp_path)
    for name, role in (("ref", "reference"), ("arm", "treatment")):
        add = ("disposition", "arms", "add", name, "--model", "sim/disp-qwen-d000",
               "--study", "s", "--role", role, "--reasoning", "off", "--samples", "3")  # fmt: skip
        assert run_main(*add).code == 0, run_main(*add)
    res = run_main(
        "disposition", "run", "--study", "s", "--judge", "sim/default", "--batteries",
        str(batteries),
    )  # fmt: skip
    assert res.code == 0, res
    # 2 stems x 1 paraphrase = 2 probes per arm
    assert _plan(res.out) == ("2 arms x 2 probes x 3 samples", 12)


def test_sources_run_prints_its_plan_first(
    workspace: object, tmp_path: Path, run_main: Callable[..., Outcome]
) -> None:
    res = run_main(
        "sources", "run", "--model", "sim/src-rigid", "--limit", "2", "--out", str(tmp_path / "r")
    )
    assert res.code == 0, res
    what, n = _plan(res.out)
    # one bare probe and 12 asserted variants per item, one tier, the neutral instruction
    assert n == 2 * 13 and what.startswith("2 items x 13 variants x 1 tiers x 1 instructions")
