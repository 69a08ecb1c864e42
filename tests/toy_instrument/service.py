"""The toy instrument's one service function: plan, answer, score, analyse (CLI and page)."""

from __future__ import annotations

from pathlib import Path

from llm.backends import get_backend
from llm.specs import ModelSpec
from tests.toy_instrument.analysis import CoinResult, analyse
from tests.toy_instrument.items import SAMPLE, read_items
from tests.toy_instrument.plan import plan, run
from tests.toy_instrument.score import score


def coin_study(model: str, *, samples: int = 20, items: Path = SAMPLE) -> CoinResult:
    """Ask every item ``samples`` times and estimate the share of yes."""
    answers = run(get_backend(ModelSpec.parse(model)), plan(read_items(items), samples))
    return analyse([score(a.text) for a in answers])
