"""Parser on real model outputs: raw replies of served models, captured, with the reviewed parse.

Each fixture under ``parser_corpus/`` (``<model>.yaml``) says how it was captured
(``captured``: spec, date, the exact command of ``parser_corpus/capture_real_outputs.py``)
and holds the raw replies with the steps, answer and parse status the parser must give;
``review`` says why the expected parse is right for that reply (what makes it hard).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from study.reasoning.parsing import STATUS_VALUES, parse_response

FIXTURES = sorted((Path(__file__).parent / "parser_corpus").glob("*.yaml"))
REAL = [f for f in FIXTURES if f.name != "corpus.yaml"]
CASES: list[tuple[str, dict[str, Any]]] = [
    (f.stem, case) for f in REAL for case in yaml.safe_load(f.read_text(encoding="utf-8"))["cases"]
]


def test_every_real_fixture_says_how_it_was_captured() -> None:
    assert REAL, "no real-model fixture in tests/study/parser_corpus/"
    for path in REAL:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        how = data["captured"]
        assert {"spec", "when", "how", "command"} <= set(how), path.name
        assert data["cases"], path.name
        for case in data["cases"]:
            assert case["status"] in STATUS_VALUES, case["id"]
            assert case["review"] and case["review"] != "TODO", case["id"]


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[f"{m}:{c['id']}" for m, c in CASES])
def test_real_output_parses_as_reviewed(case: dict[str, Any]) -> None:
    parsed = parse_response(case["text"])
    assert list(parsed.steps) == case["steps"]
    assert parsed.answer == case["answer"]
    assert parsed.parse_status == case["status"]
