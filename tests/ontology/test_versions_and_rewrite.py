"""Immutable versions, readable diffs, YAML import/export and the rewrite loop."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from sqlmodel import Session, select

from llm.specs import ModelSpec
from ontology.diff import diff_documents, render_diff, word_diff
from ontology.rewrite import (
    accept_proposal,
    list_proposals,
    propose_rewrite,
    reject_proposal,
)
from ontology.rounds import run_round
from ontology.schema import load_seed
from ontology.versions import document, get_version, list_versions, new_version
from storage.errors import InputError
from storage.models import OntologyVersion
from tests.scripted_backend import ScriptedBackend

CUL = "Cultural respect and tradition"
EMO = "Emotional depth and authentic connection"


def test_diff_is_readable_and_word_level() -> None:
    old = load_seed()
    data = old.model_dump()
    leaf = data["roots"][0]["leaves"][0]
    leaf["definition"] = leaf["definition"].replace("elders", "grandparents")
    leaf["triggers"] = [*leaf["triggers"], "grandparents"]
    new = type(old).model_validate(data)
    diff = diff_documents(old, new, old_label="a", new_label="b")
    text = render_diff(diff)
    assert f"leaf Social / {CUL}: changed" in text
    assert "[-elders,-] {+grandparents,+}" in text and "triggers added: grandparents" in text
    assert diff_documents(old, old).empty and "(no differences)" in render_diff(
        diff_documents(old, old)
    )
    assert ("insert", "c") in word_diff("a b", "a c b")


def test_versions_are_never_edited_in_place(session: Session) -> None:
    base = get_version("driftlens", session=session)
    before = dict(base.content)
    data = document(base).model_dump()
    data["roots"][0]["leaves"][0]["definition"] = "Honouring customs."
    v2 = new_version(
        base, type(document(base)).model_validate(data), session=session, author="me", note="x"
    )
    assert (v2.version, v2.parent_id, v2.author, v2.note) == (2, base.id, "me", "x")
    assert session.get(OntologyVersion, base.id).content == before  # type: ignore[union-attr]
    assert new_version(base, document(v2), session=session).id == v2.id  # same content
    renamed = document(base).model_copy(update={"name": "other"})
    with pytest.raises(InputError, match="keep its name"):
        new_version(base, renamed, session=session)


def test_cli_show_export_import_round_trip(cli, tmp_path: Path) -> None:
    res = cli("ontology", "show", "original")
    assert res.exit_code == 0 and "Valuing art" in res.stdout
    out = tmp_path / "o.yaml"
    assert cli("ontology", "export", "driftlens", "--out", str(out)).exit_code == 0
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    res = cli("ontology", "import", str(out))
    assert res.exit_code == 0 and "driftlens@1" in res.stdout  # identical: no new version
    data["roots"][1]["leaves"][1]["triggers"].append("apprenticeship")
    out.write_text(yaml.safe_dump(data), encoding="utf-8")
    res = cli("ontology", "import", str(out), "--author", "ana", "--note", "add a trigger")
    assert res.exit_code == 0 and "driftlens@2" in res.stdout
    res = cli("ontology", "diff", "driftlens@1", "driftlens@2")
    assert "triggers added: apprenticeship" in res.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nroots: []\n", encoding="utf-8")
    res = cli("ontology", "import", str(bad))
    assert isinstance(res.exception, InputError) and "not a valid ontology" in str(res.exception)


def test_rewrite_accept_creates_a_child_version_and_labelers_follow(
    sim_run: str, session: Session, cli, tmp_path: Path
) -> None:
    result = run_round(sim_run, ["sim", "keywords"], session=session, sample=120, seed=2)
    proposal = propose_rewrite(result.round, model=ModelSpec.parse("sim/default"), session=session)
    top = next(p for p in result.agreement.most_confused if "unmapped" not in (p.leaf_a, p.leaf_b))
    assert proposal.status == "pending"
    assert (proposal.leaf_a, proposal.leaf_b) == (top.leaf_a, top.leaf_b)
    assert proposal.evidence and all(e["text"] for e in proposal.evidence)
    assert proposal.request["messages"][0]["content"].startswith("[driftlens rewrite")
    assert "Triggers:" in (proposal.def_b_new or "")
    base = get_version(result.ontology_version, session=session)
    version = accept_proposal(proposal.id or 0, session=session, author="ana")
    assert version.parent_id == base.id and version.version == base.version + 1
    assert proposal.status == "accepted" and proposal.resulting_version_id == version.id
    with pytest.raises(InputError, match="already accepted"):
        accept_proposal(proposal.id or 0, session=session)
    # The keyword labeler reads the new triggers: agreement with the truth goes up.
    later = run_round(
        sim_run, ["sim", "keywords"], session=session, sample=120, seed=2,
        ontology_version=version.id,
    )  # fmt: skip
    assert later.agreement.mean_pairwise > result.agreement.mean_pairwise
    confused = {(p.leaf_a, p.leaf_b): p.count for p in later.agreement.most_confused}
    before = {(p.leaf_a, p.leaf_b): p.count for p in result.agreement.most_confused}
    pair = (top.leaf_a, top.leaf_b)
    assert confused.get(pair, 0) < before[pair], (confused, before)

    # Edit and reject through the CLI.
    res = cli(
        "ontology", "rewrite", "--round", str(later.round), "--model", "sim/default", "--json"
    )
    assert res.exit_code == 0, res.output
    import json

    pid = json.loads(res.stdout)["proposal"]
    edit = tmp_path / "edit.yaml"
    edit.write_text("def1: A short new first definition.\ndef2: A short new second one.\n")
    res = cli("ontology", "accept", str(pid), "--edit", str(edit))
    assert res.exit_code == 0, res.output
    proposals = list_proposals(session=session)
    assert proposals[0].id == pid and proposals[0].status == "accepted" and proposals[0].edited
    res = cli(
        "ontology", "rewrite", "--round", str(later.round), "--model", "sim/default", "--json"
    )
    pid = json.loads(res.stdout)["proposal"]
    assert cli("ontology", "reject", str(pid)).exit_code == 0
    session.expire_all()
    assert list_proposals(session=session, status="rejected")[0].id == pid
    names = [f"{v.name}@{v.version}" for v in list_versions("driftlens", session=session)]
    assert names == ["driftlens@1", "driftlens@2", "driftlens@3"]


def test_unparseable_rewrite_is_stored_not_applied(
    sim_run: str, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_round(sim_run, ["sim", "keywords"], session=session, sample=30, seed=2)

    garbage = ScriptedBackend(lambda _messages: "<def1>only one</def1>", spec="sim/garbage")
    monkeypatch.setattr("ontology.rewrite.chat_backend", lambda model: garbage)
    proposal = propose_rewrite(result.round, model=ModelSpec.parse("sim/garbage"), session=session)
    assert proposal.status == "unparseable" and proposal.def_a_new is None
    assert proposal.raw_output and "repair" in proposal.raw_output
    with pytest.raises(InputError, match="no parsed definitions"):
        accept_proposal(proposal.id or 0, session=session)
    reject_proposal(proposal.id or 0, session=session)
    assert len(session.exec(select(OntologyVersion)).all()) == 2  # only the seeds
