"""``driftlens ontology refine``: the issue's Bar on the simulator, and bad input.

The Bar: from the abstract ``original`` ontology, three ``sim:definitions`` labelers start
below 40 % mean pairwise agreement; the loop with the operational rewriter ends at or
above 83 %; with the blur rewriter no accepted rewrite has a negative held-out gain.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

from storage.models import LabelingRound, OntologyVersion, RewriteProposal
from storage.refinement_models import RefinementDecision, RefinementLoop
from tests.cli_runner import CliOutcome, cli_runner

LABELERS = "sim:definitions;seed=1,sim:definitions;seed=2,sim:definitions;seed=3"


@pytest.fixture
def driftlens(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliOutcome]:
    return cli_runner(capsys, monkeypatch)


def _refine(driftlens: Callable[..., CliOutcome], out: Path, *extra: str) -> dict:
    res = driftlens(
        "ontology", "refine", "--run", "demo", "--ontology-version", "original",
        "--labelers", LABELERS, "--json", str(out), *extra,
    )  # fmt: skip
    assert res.code == 0, res.err
    return json.loads(out.read_text(encoding="utf-8"))


def test_bar_operational_rewriter_reaches_the_target(
    sim_run: str, driftlens: Callable[..., CliOutcome], tmp_path: Path, db
) -> None:
    data = _refine(driftlens, tmp_path / "op.json", "--rewriter", "sim/rewriter-operational")
    assert data["start_agreement"] < 0.40
    assert data["final_agreement"] >= 0.83
    assert data["stop_reason"] == "target"
    accepted = [d for d in data["decisions"] if d["decision"] == "accepted"]
    assert accepted and all(d["gate"]["low"] > 0.02 for d in accepted)
    # every decision carries its evidence size, held-out ids and gate statistics
    for d in data["decisions"]:
        assert d["heldout_ids"] and "gain" in d["gate"]
    # running the same command again reads the ended loop back: nothing new is stored
    with db() as session:
        counts = _counts(session)
    again = _refine(driftlens, tmp_path / "again.json", "--rewriter", "sim/rewriter-operational")
    assert again["rounds"] == data["rounds"]
    with db() as session:
        assert _counts(session) == counts


def test_bar_blur_rewriter_gets_no_harmful_rewrite_through(
    sim_run: str, driftlens: Callable[..., CliOutcome], tmp_path: Path
) -> None:
    data = _refine(driftlens, tmp_path / "blur.json", "--rewriter", "sim/rewriter-blur")
    gated = [d for d in data["decisions"] if d["gate"]]
    assert len(gated) >= 20
    assert all(d["gate"]["gain"] >= 0 for d in gated if d["decision"] == "accepted")
    assert data["stop_reason"] == "plateau"


def _counts(session: Session) -> tuple[int, ...]:
    return tuple(
        session.exec(select(func.count()).select_from(table)).one()
        for table in (
            LabelingRound,
            RewriteProposal,
            OntologyVersion,
            RefinementLoop,
            RefinementDecision,
        )
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--target", "0.7", "--trigger", "0.7"], "must be above --trigger"),
        (["--holdout", "0"], "--holdout must be above 0 and below 1"),
        (["--holdout", "1"], "--holdout must be above 0 and below 1"),
        (["--labelers", "sim:definitions;seed=1"], "at least two labelers"),
        (["--labelers", "sim:definitions;seed=1,sim:nonsense=3"], "bad sim labeler option"),
        (["--run", "nosuchrun"], "nosuchrun"),
        (["--review", "later"], "--review must be auto or pause"),
        (["--rewriter", "sim/nosuchpreset"], "nosuchpreset"),
    ],
)
def test_bad_input_is_one_line_and_stores_nothing(
    sim_run: str, driftlens: Callable[..., CliOutcome], db, options: list[str], message: str
) -> None:
    with db() as session:
        before = _counts(session)
    base = {"--run": "demo", "--labelers": LABELERS, "--rewriter": "sim/rewriter-operational"}
    for key, value in zip(options[::2], options[1::2], strict=True):
        base[key] = value
    args = [x for kv in base.items() for x in kv]
    extra = [o for o in options if o not in base and o not in base.values()]
    res = driftlens("ontology", "refine", *args, *extra)
    line = res.one_line()
    assert line.startswith("error: ") and message in line, line
    with db() as session:
        assert _counts(session) == before


def test_a_run_without_parsed_steps_is_refused(
    sim_run: str, driftlens: Callable[..., CliOutcome], db
) -> None:
    from storage.models import GenerationRun, Response

    with db() as session:
        run = session.exec(select(GenerationRun).where(GenerationRun.name == "demo")).one()
        fields = run.model_dump(exclude={"id", "name", "created_at", "updated_at"})
        empty = GenerationRun(name="empty", **fields)
        session.add(empty)
        session.commit()
        first = session.exec(select(Response).where(Response.run_id == run.id)).first()
        assert first is not None
        copy = first.model_dump(exclude={"id", "run_id", "steps", "created_at"})
        assert empty.id is not None
        session.add(Response(run_id=empty.id, steps=[], **copy))
        session.commit()
        before = _counts(session)
    res = driftlens(
        "ontology", "refine", "--run", "empty", "--labelers", LABELERS,
        "--rewriter", "sim/rewriter-operational",
    )  # fmt: skip
    line = res.one_line()
    assert "no responses with parsed steps" in line, line
    with db() as session:
        assert _counts(session) == before
