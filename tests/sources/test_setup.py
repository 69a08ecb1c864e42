"""Setting up a source-reliance run as the browser does: upload, the job command, read-back."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest
from sqlmodel import Session

from llm.specs import ModelSpec
from storage.errors import InputError
from study.sources.setup import (
    check_items_upload,
    folder_records,
    item_probes,
    record_items,
    records_jsonl,
    report_folder,
    run_argv,
    save_items,
    sim_presets,
    stored_records,
)

SRC_PAPER = ModelSpec.parse("sim/src-paper")
ITEMS = [
    {"id": f"q{k}", "question": f"Question number {k}?", "choices": ["yes", "no", "maybe"],
     "answer": "ABC"[k % 3], "dataset": "tiny"}
    for k in range(3)
]  # fmt: skip


def _jsonl(rows: Sequence[Mapping[str, object]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_a_bad_upload_names_the_file_and_line(workspace: Path) -> None:
    bad = [*ITEMS[:2], {**ITEMS[2], "answer": "Z"}]
    with pytest.raises(InputError, match=r"^mine\.jsonl, line 3: answer .Z."):
        save_items(workspace, "r", "mine.jsonl", _jsonl(bad))
    assert not (workspace / "inputs" / "sources").exists()
    with pytest.raises(InputError, match=r"^mine\.txt: items files must be"):
        check_items_upload("mine.txt", b"")
    with pytest.raises(InputError, match="Tier 2 needs a stored claim set"):
        run_argv("r", model=SRC_PAPER, items=None, out=workspace, tiers=(1, 2))
    with pytest.raises(InputError, match="at least one system instruction"):
        run_argv("r", model=SRC_PAPER, items=None, out=workspace, instructions=())


def test_the_page_command_runs_and_the_item_view_reads_it(
    workspace: Path, session: Session, cli: Callable[..., object]
) -> None:
    assert "sim/src-paper" in sim_presets()
    items = save_items(workspace, "tiny run", "mine.jsonl", _jsonl(ITEMS))
    out = report_folder(workspace, "tiny run")
    argv = run_argv("tiny run", model=SRC_PAPER, items=items, out=out,
                    instructions=("n", "d"), bootstrap=200)  # fmt: skip
    result = cli(*argv)
    assert result.exit_code == 0, (result.output, result.exception)  # type: ignore[attr-defined]
    assert (out / "stats.json").is_file() and (out / "report.html").is_file()

    stored = stored_records("tiny run", session=session)
    # 3 items x 13 variants x 2 instructions, each probe once
    assert len(stored) == 78 and record_items(stored) == ["q0", "q1", "q2"]
    view = item_probes(stored, "q1")
    assert len(view) == 26 and set(view["instruction"]) == {"n", "d"}
    assert {"P(A)", "P(B)", "P(C)"} <= set(view.columns)
    assert view["top logprobs"].str.len().gt(0).all()
    bare = view[(view["variant"] == "bare") & (view["instruction"] == "n")].iloc[0]
    assert abs(sum(bare[f"P({k})"] for k in "ABC") - 1.0) < 1e-6
    # the report folder's probes.jsonl holds the same probes the database does
    written = folder_records(out)
    assert sorted((r["item_id"], r["variant"], r["choice"]) for r in written) == sorted(
        (r["item_id"], r["variant"], r["choice"]) for r in stored
    )
    with pytest.raises(InputError, match="No probes of item 'zz'"):
        item_probes(stored, "zz")
    assert len(records_jsonl(stored).decode().splitlines()) == 78
