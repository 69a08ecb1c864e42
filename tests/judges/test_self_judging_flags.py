"""``--allow-self-judging`` on every command and page that starts labeling (issue 36).

``ontology refine``, ``ontology validate stability|robustness|cross|run`` and ``analyze
--label`` label a run's steps with an LLM labeler; when that labeler is the model that
generated the run it would grade its own reasoning. Each refuses that in one line before
anything is stored or asked, unless the flag is given. With the flag the role passes the
check and is stored as self-judging; the command then goes on to its first request,
which here fails for want of a Gemma endpoint (nothing in these tests serves one), in a
line of its own that is not the refusal.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from sqlmodel import Session, select

from storage.models import LabelingRound, ModelRole
from storage.refinement_models import RefinementLoop
from tests.cli_runner import CliOutcome, cli_runner
from tests.judges.test_judge_e2e import RUN
from tests.judges.test_model_roles import GEMMA, _gemma_run

LABELER = f"llm:{GEMMA}"


def _refused(outcome: CliOutcome) -> None:
    line = outcome.one_line()
    assert line.startswith("error: ") and "--allow-self-judging" in line, line
    assert f"labeler {GEMMA} is the model under test in run '{RUN}'" in line, line


def _passed_the_check(outcome: CliOutcome) -> None:
    """Allowed: whatever stops the command next, it is not the role refusal."""
    assert "--allow-self-judging" not in outcome.err + outcome.out, outcome.err


def _self_roles(session: Session) -> list[tuple[str, str, bool]]:
    session.expire_all()
    rows = session.exec(select(ModelRole).where(ModelRole.model == GEMMA)).all()
    return [(r.run, r.role, r.self_judging) for r in rows]


@pytest.fixture
def run_cli(
    session: Session, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliOutcome]:
    """The CLI on a run the simulator generated and that is marked as Gemma's."""
    for name in ("GEMMA_BASE_URL", "GEMMA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    _gemma_run(session)
    return cli_runner(capsys, monkeypatch)


def _round(session: Session) -> int:
    """A finished round of rule-based labelers on the Gemma run (no model role)."""
    from ontology.rounds import run_round
    from ontology.versions import seed_ontologies

    seed_ontologies(session=session)
    session.commit()
    return run_round(RUN, ["keywords", "sim"], session=session, sample=4, seed=0).round


def test_ontology_refine_refuses_a_self_labeler_before_the_loop_is_stored(
    session: Session, run_cli: Callable[..., CliOutcome]
) -> None:
    argv = ["ontology", "refine", "--run", RUN, "--labelers", f"{LABELER},keywords"]
    argv += ["--rewriter", "sim/rewriter-operational", "--sample", "4", "--max-rounds", "1"]
    _refused(run_cli(*argv))
    assert session.exec(select(RefinementLoop)).all() == []
    assert session.exec(select(LabelingRound)).all() == [] and _self_roles(session) == []

    allowed = run_cli(*argv, "--allow-self-judging")
    _passed_the_check(allowed)
    assert (RUN, "labeler", True) in _self_roles(session)


@pytest.mark.parametrize(
    "experiment",
    [
        ["stability", "--labeler", LABELER],
        ["robustness", "--labeler", LABELER, "--model", "sim/rewriter-operational"],
    ],
    ids=["stability", "robustness"],
)
def test_ontology_validate_refuses_a_self_labeler_of_a_rounds_run(
    session: Session, run_cli: Callable[..., CliOutcome], experiment: list[str]
) -> None:
    number = _round(session)
    versions = len(session.exec(select(RefinementLoop)).all())
    argv = ["ontology", "validate", experiment[0], "--round", str(number), *experiment[1:]]
    _refused(run_cli(*argv))
    assert _self_roles(session) == []
    assert len(session.exec(select(RefinementLoop)).all()) == versions
    _passed_the_check(run_cli(*argv, "--allow-self-judging"))
    assert _self_roles(session) == [(RUN, "labeler", True)]


def test_ontology_validate_cross_refuses_a_self_labeler_before_any_round(
    session: Session, run_cli: Callable[..., CliOutcome]
) -> None:
    argv = ["ontology", "validate", "cross", "--run", RUN, "--labelers", f"{LABELER},keywords"]
    argv += ["--sample", "4"]
    _refused(run_cli(*argv))
    assert session.exec(select(LabelingRound)).all() == [] and _self_roles(session) == []
    _passed_the_check(run_cli(*argv, "--allow-self-judging"))
    assert (RUN, "labeler", True) in _self_roles(session)


def test_the_validation_pages_request_carries_the_permission(
    session: Session, run_cli: Callable[..., CliOutcome]
) -> None:
    """``ontology validate run --request`` is the Validation page's job."""
    from ontology.validation_runs import parse_request

    number = _round(session)
    request = {"experiment": "stability", "round": number, "labeler": LABELER}
    _refused(run_cli("ontology", "validate", "run", "--request", json.dumps(request)))
    assert _self_roles(session) == []
    allowed = {**request, "allow_self_judging": True}
    assert parse_request(allowed).summary().endswith(", self-judging allowed")
    _passed_the_check(run_cli("ontology", "validate", "run", "--request", json.dumps(allowed)))
    assert _self_roles(session) == [(RUN, "labeler", True)]


def test_analyze_label_first_refuses_a_self_labeler(
    session: Session, run_cli: Callable[..., CliOutcome]
) -> None:
    argv = ["analyze", "--run", RUN, "--labeler", LABELER, "--label", "--bootstrap", "2000"]
    _refused(run_cli(*argv))
    assert _self_roles(session) == []
    _passed_the_check(run_cli(*argv, "--allow-self-judging"))
    assert _self_roles(session) == [(RUN, "labeler", True)]


def test_the_permission_is_no_part_of_a_refinement_loops_key() -> None:
    """The same loop is found with or without the flag (and the loops stored before it)."""
    import hashlib

    from llm.specs import ModelSpec
    from ontology.refinement import RefineConfig

    base = RefineConfig(
        run=RUN, labelers=(LABELER, "keywords"),
        rewriter=ModelSpec.parse("sim/rewriter-operational"),
    )  # fmt: skip
    allowed = base.model_copy(update={"allow_self_judging": True})
    assert allowed.key() == base.key()
    # the digest of the options as they were before the permission existed
    before = json.dumps(
        base.model_dump(mode="json", exclude={"allow_self_judging"}), sort_keys=True
    )
    assert base.key() == hashlib.sha256(before.encode("utf-8")).hexdigest()[:24]
