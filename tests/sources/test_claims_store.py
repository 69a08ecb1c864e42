"""Tier-2 claims stored in the database: written, reviewed and imported, used by a run."""

from __future__ import annotations

import json
from pathlib import Path

from sqlmodel import Session, select

from storage.models import SourceClaim, SourceRun
from study.sources.items import items_to_jsonl, shipped_items


def test_claims_are_stored_imported_after_review_and_used(
    cli, session: Session, tmp_path: Path
) -> None:
    items = shipped_items()[:4]
    items_file = tmp_path / "items.jsonl"
    items_file.write_text(items_to_jsonl(items), encoding="utf-8")
    out = tmp_path / "claims.jsonl"
    res = cli("sources", "claims", "--model", "sim/default", "--items", str(items_file),
              "--out", str(out), "--set", "draft")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "claim set draft" in res.output
    stored = session.exec(select(SourceClaim).where(SourceClaim.claim_set == "draft")).all()
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert {(c.item_id, c.claim) for c in stored} == {(x["id"], x["claim"]) for x in lines}
    assert {c.writer for c in stored} == {"sim/default"} and len(stored) == 4
    # the writer's settings with every generated claim (one request setting for the set)
    assert len({json.dumps(c.settings, sort_keys=True) for c in stored}) == 1
    written = stored[0].settings
    assert written is not None and written["model"] == "sim/default"
    assert (written["prompt_version"], written["temperature"], written["seed"]) == (
        "tier2-claims-v1", 0.0, 0,
    )  # fmt: skip
    # a reviewer edits one claim and imports the file as the reviewed set
    lines[0]["claim"] = "after some thought, people tend to pick [answer] here"
    out.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    res = cli("sources", "claims-import", str(out), "--set", "reviewed",
              "--items", str(items_file))  # fmt: skip
    assert res.exit_code == 0, res.output
    session.expire_all()
    reviewed = {
        c.item_id: c
        for c in session.exec(select(SourceClaim).where(SourceClaim.claim_set == "reviewed"))
    }
    assert reviewed[lines[0]["id"]].claim == lines[0]["claim"]
    assert {c.origin for c in reviewed.values()} == {"imported"}
    assert all(c.settings is None for c in reviewed.values())  # no request wrote them
    # re-importing replaces per item, no duplicates
    assert cli("sources", "claims-import", str(out), "--set", "reviewed",
               "--items", str(items_file)).exit_code == 0  # fmt: skip
    assert len(session.exec(select(SourceClaim)).all()) == 8
    # a stored set feeds a tier-2 run, which stores the claims' hash in its settings
    res = cli("sources", "run", "--model", "sim/src-paper", "--items", str(items_file),
              "--tier", "1", "--tier", "2", "--claims-set", "reviewed", "--run", "t2",
              "--out", str(tmp_path / "r"), "--bootstrap", "200")  # fmt: skip
    assert res.exit_code == 0, res.output
    records = [json.loads(x) for x in (tmp_path / "r" / "probes.jsonl").read_text().splitlines()]
    assert len(records) == 4 + 4 * 12 * 2
    edited = [r for r in records if r["tier"] == 2 and r["item_id"] == lines[0]["id"]]
    assert any("people tend to pick" in r["messages"][1]["content"] for r in edited)
    run = session.exec(select(SourceRun).where(SourceRun.name == "t2")).one()
    assert run.config["claims_sha256"]
    # bad input: one sentence naming the line / the set, no traceback
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": items[0].id, "claim": "no placeholder"}) + "\n")
    res = cli("sources", "claims-import", str(bad), "--set", "x", "--items", str(items_file))
    assert res.exit_code != 0 and "line 1" in res.output and "Traceback" not in res.output
    res = cli("sources", "run", "--model", "sim/src-paper", "--tier", "2",
              "--claims-set", "nope")  # fmt: skip
    assert res.exit_code != 0 and "No claim set named 'nope'" in res.output
