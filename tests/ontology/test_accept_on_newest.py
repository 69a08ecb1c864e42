"""Accepting a proposal whose base is not the newest version never reverts newer work."""

from __future__ import annotations

import json

from sqlmodel import Session

from ontology.rewrite import list_proposals, require_proposal
from ontology.rounds import RoundResult, run_round
from ontology.schema import UNMAPPED
from ontology.versions import document, get_version, new_version, replace_definitions
from storage.errors import InputError
from tests.ontology.conftest import cli_json


def _rewrite_args(number: int, pair: tuple[str, str]) -> list[str]:
    model = ["--model", "sim/default"]
    return [
        "ontology",
        "rewrite",
        "--round",
        str(number),
        *model,
        "--pair",
        ",".join(pair),
        "--json",
    ]


def _round_with_two_disjoint_pairs(
    sim_run: str, session: Session
) -> tuple[RoundResult, tuple[tuple[str, str], tuple[str, str]]]:
    """A labeling round and two of its most confused leaf pairs sharing no leaf."""
    result = run_round(sim_run, ["sim", "keywords"], session=session, sample=120, seed=2)
    confused = [
        (p.leaf_a, p.leaf_b)
        for p in result.agreement.most_confused
        if UNMAPPED not in (p.leaf_a, p.leaf_b)
    ]
    first = confused[0]
    second = next(p for p in confused[1:] if not set(p) & set(first))
    return result, (first, second)


def test_cli_accepts_two_proposals_of_one_round_on_top_of_each_other(
    sim_run: str, session: Session, cli
) -> None:
    result, (first, second) = _round_with_two_disjoint_pairs(sim_run, session)
    ids = []
    for pair in (first, second):
        out = cli_json(cli(*_rewrite_args(result.round, pair)))
        assert (out["leaf_a"], out["leaf_b"]) == pair
        ids.append(out["proposal"])
    base = get_version(result.ontology_version, session=session)

    res = cli("ontology", "accept", str(ids[0]))
    assert res.exit_code == 0, res.output
    res = cli("ontology", "accept", str(ids[1]))
    assert res.exit_code == 0, res.output
    assert "on top of driftlens@2" in res.stdout
    session.expire_all()
    v2, v3 = get_version("driftlens@2", session=session), get_version("driftlens", session=session)
    assert v2.parent_id == base.id
    assert v3.version == 3 and v3.parent_id == v2.id  # not the round's version (@1)
    newest = document(v3)
    for pid in ids:  # both rewrites are in the newest version
        p = require_proposal(pid, session=session)
        for leaf, new in ((p.leaf_a, p.def_a_new), (p.leaf_b, p.def_b_new)):
            assert new is not None
            assert newest.leaf(leaf).definition == new.split("\nTriggers:")[0].strip()
    rows = {r.id: r for r in list_proposals(session=session)}
    assert rows[ids[1]].base_version == "driftlens@1"
    assert rows[ids[1]].resulting_version == "driftlens@3"


def _edit_definition(session: Session, leaf: str, text: str) -> None:
    """Save a new driftlens version (as the YAML editor does) changing one definition."""
    newest = get_version("driftlens", session=session)
    doc = replace_definitions(document(newest), {leaf: text})
    new_version(newest, doc, session=session, author="editor")
    session.commit()


def test_accept_keeps_newer_edits_and_refuses_when_its_own_leaf_changed(
    sim_run: str, session: Session, cli
) -> None:
    result, (first, second) = _round_with_two_disjoint_pairs(sim_run, session)
    ids = [
        cli_json(cli(*_rewrite_args(result.round, pair)))["proposal"] for pair in (first, second)
    ]
    # Someone else's edit of an unrelated leaf (driftlens@2) is kept by accepting #1.
    other = next(n for n in document(get_version("driftlens", session=session)).leaf_names
                 if n not in (*first, *second))  # fmt: skip
    _edit_definition(session, other, "An edit made after the round.")
    res = cli("ontology", "accept", str(ids[0]))
    assert res.exit_code == 0, res.output
    session.expire_all()
    v3 = get_version("driftlens", session=session)
    assert v3.version == 3 and v3.parent_id == get_version("driftlens@2", session=session).id
    assert document(v3).leaf(other).definition == "An edit made after the round."

    # An edit of one of #2's own leaves since its base: accepting #2 is refused.
    _edit_definition(session, second[1], "A competing definition.")
    res = cli("ontology", "accept", str(ids[1]))
    assert res.exit_code != 0
    assert isinstance(res.exception, InputError)
    message = str(res.exception)
    assert "\n" not in message and repr(second[1]) in message
    assert "driftlens@1" in message and "driftlens@4" in message
    session.expire_all()
    after = get_version("driftlens", session=session)
    assert after.version == 4  # nothing was stored
    assert document(after).leaf(second[1]).definition == "A competing definition."
    assert require_proposal(ids[1], session=session).status == "pending"
    listing = json.loads(cli("ontology", "proposals", "--json").stdout)
    assert {r["id"]: r["base_version"] for r in listing}[ids[1]] == "driftlens@1"
