"""The tier-2 claim check against a real Label Studio: two reviewers, verdict shares."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from annotation.client import LabelStudioClient
from study.sources.items import items_to_jsonl, shipped_items
from tests.annotation.conftest import annotate_each, make_users

pytestmark = pytest.mark.labelstudio


def test_claim_check_pushes_a_stored_set_and_summarises_two_reviewers(
    run_cli: Any, ls_client: LabelStudioClient, tmp_path: Path
) -> None:
    items = shipped_items()[:4]
    items_file = tmp_path / "items.jsonl"
    items_file.write_text(items_to_jsonl(items), encoding="utf-8")
    res = run_cli("sources", "claims", "--model", "sim/default", "--items", str(items_file),
                  "--out", str(tmp_path / "claims.jsonl"), "--set", "c1")  # fmt: skip
    assert res.code == 0, res.err
    res = run_cli("annotate", "push", "claim_check", "--select", "claim_set=c1",
                  "--select", f"items={items_file}", "--json")  # fmt: skip
    assert res.code == 0, res.err
    pushed = res.json()
    assert pushed["imported"] == 4
    tasks = sorted(ls_client.list_tasks(pushed["project_id"]), key=lambda t: t.id)
    by_id = {it.id: it for it in items}
    claims = {
        json.loads(x)["id"]: json.loads(x)["claim"]
        for x in (tmp_path / "claims.jsonl").read_text().splitlines()
    }
    for t in tasks:
        item = by_id[t.data["item_id"]]
        answer = item.choice_text(item.answer)
        # the sentence a "+" probe shows: the claim with the correct option in place
        assert t.data["claim"] == claims[item.id].replace("[answer]", answer)
        assert t.data["asserted"] == f"{item.answer}. {answer}"
    # reviewer 1: supports, supports, leaks, unusable; reviewer 2 differs on the last
    rev1 = ["supports", "supports", "leaks", "unusable"]
    rev2 = ["supports", "supports", "leaks", "wrong_option"]
    users = make_users(ls_client, n=2)
    annotate_each(ls_client, users, tasks, "verdict", [rev1, rev2], "claim")
    res = run_cli("annotate", "apply", "claim_check", "--json")
    assert res.code == 0, res.err
    out = res.json()
    shares = {v["verdict"]: v for v in out["claim_verdicts"]}
    assert shares["supports"]["k"] == 2 and shares["supports"]["n"] == 3
    assert shares["supports"]["share"] == pytest.approx(2 / 3)
    assert shares["leaks"]["k"] == 1 and shares["unusable"]["k"] == 0
    lo, hi = shares["supports"]["ci_low"], shares["supports"]["ci_high"]
    assert lo < 2 / 3 < hi
    (agreement,) = out["claim_agreement"]
    assert agreement["n"] == 4 and agreement["exact"] == pytest.approx(0.75)
    res = run_cli("annotate", "apply", "claim_check")
    assert res.code == 0 and "supports" in res.out
    res = run_cli("annotate", "push", "claim_check", "--select", "claim_set=nope")
    assert res.code != 0 and "No claim set named 'nope'" in res.err + res.out
