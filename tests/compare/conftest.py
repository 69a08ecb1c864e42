"""A simulated disposition study shared by the comparison tests (built once per session)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from llm.specs import ModelSpec
from study.disposition.items import BatteryDocument, Stem, load_sample_batteries
from tests.cli_runner import cli_runner

#: Two tendencies, 40 stems each (the 10 shipped stems under new ids, each copy with its own
#: texts: the simulator hashes a stem's effect from its id, and a model, like the served
#: simulator, can only tell items apart by what it reads), 3 paraphrases, 2 samples.
N_STEMS = 40
BATTERIES = ("self_interest", "oversight")


def dose_pair() -> list[Any]:
    """Two disposition arms of one training seed: the reference at dose 25, one at 75."""
    from study.disposition.runs import ArmSpec

    return [
        ArmSpec("d025-s1", ModelSpec.parse("sim/disp-qwen-d025-s1"), role="reference", dose=25,
                train_seed=1, reasoning="off"),
        ArmSpec("d075-s1", ModelSpec.parse("sim/disp-qwen-d075-s1"), dose=75, train_seed=1,
                reasoning="off"),
    ]  # fmt: skip


def battery_doc(n_stems: int = N_STEMS) -> BatteryDocument:
    """The shipped batteries widened to ``n_stems`` stems of three paraphrases.

    Copy ``k`` of a shipped stem opens each of its paraphrases with "Case k." so that 40
    stems are 40 items to any reader (reused texts made 10 items of the 40 ids).
    """
    doc = load_sample_batteries()
    out = []
    for b in doc.batteries:
        if b.name not in BATTERIES:
            continue
        stems = [
            Stem(id=f"{b.stems[k % len(b.stems)].id}-{k:02d}",
                 paraphrases=[f"Case {k + 1}. {text}"
                              for text in b.stems[k % len(b.stems)].paraphrases[:3]])
            for k in range(n_stems)
        ]  # fmt: skip
        out.append(b.model_copy(update={"stems": stems}))
    return BatteryDocument(batteries=out)


def build_disposition_study(ws: Path) -> None:
    """Add the study ``cmp`` (arms d025-s1, d025-s2, d075-s1, answered and judged) to ``ws``.

    Reasoning is off: the simulator's dose curve is steep there (−4.7 pp at dose 25,
    −30.4 pp at 75), so the larger dose is a known, large difference.
    """
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from study.disposition.runs import ArmSpec, add_arms, run_study

    arms = [
        ArmSpec(
            "d025-s1",
            ModelSpec.parse("sim/disp-qwen-d025-s1"),
            role="reference",
            dose=25,
            train_seed=1,
            reasoning="off",
        ),
        ArmSpec(
            "d025-s2",
            ModelSpec.parse("sim/disp-qwen-d025-s2"),
            dose=25,
            train_seed=2,
            reasoning="off",
        ),
        ArmSpec(
            "d075-s1",
            ModelSpec.parse("sim/disp-qwen-d075-s1"),
            dose=75,
            train_seed=1,
            reasoning="off",
        ),
    ]
    with open_workspace_session(resolve_settings(workspace=ws)) as session:
        add_arms("cmp", arms, session=session)
        run_study(
            "cmp",
            battery_doc(),
            session=session,
            judge=ModelSpec.parse("sim/default"),
            repeat_share=0.0,
        )


@pytest.fixture(scope="session")
def disposition_workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A workspace whose study ``cmp`` has arms d025-s1, d025-s2 (seed only) and d075-s1."""
    ws = tmp_path_factory.mktemp("compare-ws")
    build_disposition_study(ws)
    yield ws


@pytest.fixture
def ws_cli(disposition_workspace: Path, cli: Callable[..., object]) -> Callable[..., object]:
    """``driftlens --workspace <the shared workspace> ARGS``."""

    def run(*args: str) -> object:
        return cli("--workspace", str(disposition_workspace), *args)

    return run


@pytest.fixture
def ws_main(
    disposition_workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, str]]:
    """Run ``driftlens ARGS`` as the console script does: ``(exit code, stdout + stderr)``."""
    driftlens = cli_runner(capsys, monkeypatch, wide=False)

    def run(*args: str) -> tuple[int, str]:
        got = driftlens("--workspace", str(disposition_workspace), *args)
        return got.code, got.out + got.err

    return run
