"""The toy's smallest simulated study, as the instrument checks drive it (``study_kit``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlmodel import Session

from driftlens_plugins import RunOutcome, StudyKit


def _run(
    name: str,
    *,
    model: str,
    session: Session,
    settings: Any,
    limit: int | None = None,
    executor: Any = None,
    per_shard: int | None = None,
) -> RunOutcome:
    if executor is None:
        from tests.toy_instrument.store import run_coin

        return run_coin(name, model=model, session=session, limit=limit)
    from study.cluster.coordinator import ShardedPass
    from tests.toy_instrument.sharded import run_coin_sharded

    sharding = ShardedPass(session=session, settings=settings, executor=executor,
                           per_shard=per_shard or 2)  # fmt: skip
    return run_coin_sharded(name, model=model, sharding=sharding)


def _report(runs: Sequence[str], out: Path, *, session: Session) -> Path:
    from tests.toy_instrument.report import write_report

    return write_report(runs, out, session=session)


def _terminal(runs: Sequence[str], out: Path) -> list[str]:
    """``driftlens toy show RUN``: the run's answers on the terminal."""
    return ["toy", "show", runs[0]]


def study_kit() -> StudyKit:
    """Two coins told apart (0.8 vs 0.5 yes), a hostile coin, and the coin check study."""
    return StudyKit(
        models=("sim/coin-yes", "sim/coin-fair"),
        run=_run,
        report=_report,
        job="run",
        hostile_model="sim/coin-hostile",
        human_kinds=("coin_check",),
        terminal=_terminal,
        hostile_text=("<b>bold</b>", "alert(1)"),  # words of the hostile coin's answer
    )
