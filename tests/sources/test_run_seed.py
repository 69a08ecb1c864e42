"""Issue 37 item 10: ``sources run`` has a generation seed apart from the bootstrap seed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from click.testing import Result
from sqlmodel import Session

from study.sources.store import load_sources_runs


def _answers(name: str, db: Callable[[], AbstractContextManager[Session]]) -> list[object]:
    with db() as session:
        (run,) = load_sources_runs(name, session=session)
    return [(r.variant, r.reading.letter, r.reading.probs) for r in run.records]


def _iter_args(tmp_path: Path, name: str, *extra: str) -> Iterator[str]:
    yield from ("sources", "run", "--model", "sim/src-paper", "--limit", "12", "--bootstrap",
                "200", "--run", name, "--out", str(tmp_path / name), *extra)  # fmt: skip


def test_two_generation_seeds_give_two_runs_and_one_seed_repeats(
    workspace: object,
    tmp_path: Path,
    cli: Callable[..., Result],
    db: Callable[[], AbstractContextManager[Session]],
) -> None:
    """Before, ``--seed`` was only the bootstrap's: every run of a preset was identical."""
    runs = {
        "s1": ("--run-seed", "1"),
        "s1again": ("--run-seed", "1"),
        "s2": ("--run-seed", "2"),
        "boot": ("--run-seed", "1", "--seed", "9"),
    }
    for name, extra in runs.items():
        res = cli(*_iter_args(tmp_path, name, *extra))
        assert res.exit_code == 0, res.output
    s1, s2 = _answers("s1", db), _answers("s2", db)
    assert s1 == _answers("s1again", db)  # one seed, one answer set
    assert s1 == _answers("boot", db)  # the bootstrap seed changes no answer
    assert s1 != s2  # another instance of the same simulated model
    assert len(s1) == len(s2) > 0
