"""Benchmark export: tier selections, JSONL = Parquet, datasheet numbers from stored data."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from sqlmodel import Session
from typer.testing import Result

from storage.errors import InputError
from storage.models import CurationVote, Question
from study.reasoning.benchmark_export import export_benchmark, pairwise_share

CRITERIA = ("clear", "no_vague_terms", "single_verifiable_answer", "answerable_by_restating")
PASSING = {
    "clear": "yes",
    "no_vague_terms": "yes",
    "single_verifiable_answer": "no",
    "answerable_by_restating": "no",
}
EVIL_SOURCE = "<img src=x onerror=alert(1)> | # [link](javascript:x)"


def _seed(session: Session) -> None:
    rows = [
        Question(
            external_id="c1",
            text="Rent or buy? Weigh it.",
            source="driftlens-sample",
            domains=["finance"],
            tier="core",
            filter_label="ACCEPT",
            filter_reason="Trade-off.",
            filter_domains=["finance"],
            filter_model="sim/x",
        ),
        Question(
            external_id="r1",
            text="Quit or stay? Justify.",
            source=EVIL_SOURCE,
            domains=[],
            tier="relaxed",
            filter_label="ACCEPT",
            filter_reason="Decision.",
            filter_domains=["career", "personal decision"],
            filter_model="sim/x",
        ),
        Question(
            external_id="x1",
            text="What is 2 + 2?",
            source="web",
            tier=None,
            filter_label="REJECT",
            filter_reason="Lookup.",
            filter_domains=["other"],
            filter_model="sim/x",
        ),
        Question(
            external_id="e1",
            text="Hmm?",
            source="web",
            filter_model="sim/x",
            filter_error="unparseable after a repair request: no valid JSON object",
            filter_raw="nope",
        ),
    ]
    session.add_all(rows)
    session.flush()
    c1, r1 = rows[0].id or 0, rows[1].id or 0
    for qid, dissent in ((c1, None), (r1, ("no_vague_terms", "carol"))):
        for annotator in ("alice@example.org", "bob@example.org", "carol"):
            for crit in CRITERIA:
                vote = PASSING[crit]
                if dissent == (crit, annotator):
                    vote = "no" if vote == "yes" else "yes"
                session.add(
                    CurationVote(
                        question_id=qid,
                        criterion=crit,
                        annotator=annotator,
                        vote=vote,
                        source="import",
                    )
                )
    session.commit()


def _read(out: Path) -> tuple[list[dict[str, Any]], pd.DataFrame, str]:
    records = [json.loads(x) for x in (out / "benchmark.jsonl").read_text().splitlines()]
    frame = pd.read_parquet(out / "benchmark.parquet")
    return records, frame, (out / "datasheet.md").read_text(encoding="utf-8")


def test_pairwise_share() -> None:
    assert pairwise_share(["yes", "yes", "yes"]) == 1.0
    assert pairwise_share(["yes", "yes", "no"]) == pytest.approx(1 / 3)
    assert pairwise_share(["yes"]) is None


@pytest.mark.parametrize(
    ("tier", "ids"),
    [("core", ["c1"]), ("relaxed", ["c1", "r1"]), ("all", ["c1", "r1", "x1", "e1"])],
)
def test_tier_selection_and_files_agree(
    session: Session, tmp_path: Path, tier: str, ids: list[str]
) -> None:
    _seed(session)
    result = export_benchmark(tmp_path, session=session, tier=tier)
    assert result.questions == len(ids)
    assert [p.name for p in result.files] == [
        "benchmark.jsonl",
        "benchmark.parquet",
        "datasheet.md",
    ]
    records, frame, _ = _read(tmp_path)
    assert [r["id"] for r in records] == ids
    assert list(frame["id"]) == ids  # pandas reads it
    # Parquet holds exactly the JSONL records (nested votes included).
    assert pq.read_table(tmp_path / "benchmark.parquet").to_pylist() == records


def test_record_contents(session: Session, tmp_path: Path) -> None:
    _seed(session)
    export_benchmark(tmp_path, session=session, tier="all")
    records, _, sheet = _read(tmp_path)
    by_id = {r["id"]: r for r in records}
    c1, r1, e1 = by_id["c1"], by_id["r1"], by_id["e1"]
    assert c1["domains"] == ["finance"] and r1["domains"] == ["career", "personal decision"]
    assert c1["filter_label"] == "ACCEPT" and by_id["x1"]["filter_reason"] == "Lookup."
    assert e1["filter_label"] is None and e1["filter_error"].startswith("unparseable")
    vague = next(v for v in r1["votes"] if v["criterion"] == "no_vague_terms")
    assert vague == {
        "criterion": "no_vague_terms",
        "passing": "yes",
        "yes": 2,
        "no": 1,
        "unsure": 0,
        "n": 3,
        "label": "yes",
        "passed": True,
        "unanimous": False,
        "agreement": pytest.approx(1 / 3),
    }
    assert all(v["unanimous"] and v["agreement"] == 1.0 for v in c1["votes"])
    assert [v["criterion"] for v in c1["votes"]] == sorted(CRITERIA)
    assert by_id["x1"]["votes"] == []
    raw = (tmp_path / "benchmark.jsonl").read_text() + sheet
    assert "alice" not in raw and "carol" not in raw  # annotator identities stay private


def test_datasheet_numbers_and_inert_text(session: Session, tmp_path: Path) -> None:
    _seed(session)
    export_benchmark(tmp_path, session=session, tier="relaxed")
    _, _, sheet = _read(tmp_path)
    assert "Tier selection **relaxed**" in sheet
    assert "Questions in this export: **2** (workspace: 4)" in sheet
    assert "By tier: core 1, relaxed 1." in sheet
    assert "| finance | 1 |" in sheet and "| career | 1 |" in sheet and "| health | 0 |" in sheet
    assert "`sim/x` (2)" in sheet
    assert "In the workspace: ACCEPT 2, REJECT 1, error 1." in sheet
    # no_vague_terms: 5 yes, 1 no, both pass 2-of-3, one unanimous, mean agreement (1+1/3)/2.
    assert "| no\\_vague\\_terms | yes | 2 | 5 | 1 | 0 | 2 | 1 | 0.67 |" in sheet
    assert "| clear | yes | 2 | 6 | 0 | 0 | 2 | 2 | 1.00 | n/a |" in sheet
    assert "Krippendorff" in sheet and "## Licence" in sheet
    assert "driftlens-sample" in sheet and "licence and terms of its source" in sheet
    assert "<img" not in sheet and "&lt;img src=x onerror=alert(1)&gt;" in sheet
    assert "\\[link\\](javascript:x)" in sheet


def test_errors(session: Session, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no questions are stored"):
        export_benchmark(tmp_path, session=session, tier="all")
    _seed(session)
    with pytest.raises(InputError, match="Unknown tier"):
        export_benchmark(tmp_path, session=session, tier="gold")


def test_no_core_questions_hint(session: Session, tmp_path: Path) -> None:
    session.add(Question(external_id="u", text="Unverified?"))
    session.commit()
    with pytest.raises(InputError, match="no core questions yet"):
        export_benchmark(tmp_path, session=session, tier="core")
    assert not (tmp_path / "benchmark.jsonl").exists()


def test_cli_export_benchmark(cli: Callable[..., Result], session: Session, tmp_path: Path) -> None:
    _seed(session)
    res = cli("export", "benchmark", "--out", str(tmp_path / "b"), "--tier", "relaxed")
    assert res.exit_code == 0, res.output
    assert "Wrote 2 question(s) (relaxed)" in " ".join(res.output.split())
    assert (tmp_path / "b" / "datasheet.md").is_file()
    bad = cli("export", "benchmark", "--out", str(tmp_path / "c"), "--tier", "gold")
    assert bad.exit_code != 0
