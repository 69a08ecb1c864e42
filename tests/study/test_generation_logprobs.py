"""``generate --top-logprobs``: token logprobs stored on each response and exported."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from sqlmodel import Session, select

from llm.logprobs import logprobs_from_json
from storage.models import GenerationRun, Response
from storage.repo.requests import stored_request


def test_logprobs_are_stored_on_responses_and_exported(
    tmp_path: Path, cli: Callable[..., object], session: Session
) -> None:
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": "lp1", "text": "Should I rent or buy a home?"}\n', encoding="utf-8")
    assert cli("questions", "import", str(q)).exit_code == 0  # type: ignore[attr-defined]
    args = ("generate", "--model", "sim/default", "--run", "lp", "--perturbations", "none")
    result = cli(*args, "--samples", "2", "--top-logprobs", "3")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    rows = session.exec(select(Response)).all()
    assert len(rows) == 2
    for row in rows:
        toks = logprobs_from_json(row.logprobs)
        assert toks is not None and "".join(t.token for t in toks) == row.text
        assert all(len(t.top) == 3 for t in toks)
        full = stored_request(row, session=session)
        assert full["extras"] == {"logprobs": True, "top_logprobs": 3}
    [run] = session.exec(select(GenerationRun)).all()
    assert run.config["top_logprobs"] == 3
    out = tmp_path / "r.jsonl"
    exported = cli("export", "responses", "--run", "lp", "--out", str(out))
    assert exported.exit_code == 0, exported.output  # type: ignore[attr-defined]
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["logprobs"] for r in records] == [r.logprobs for r in rows]
    # A run without the option stores none (and its requests carry no extras).
    plain = cli("generate", "--model", "sim/default", "--run", "plain", "--samples", "1")
    assert plain.exit_code == 0, plain.output  # type: ignore[attr-defined]
    plain_rows = session.exec(select(Response).where(Response.run_id != run.id)).all()
    assert plain_rows and all(r.logprobs is None for r in plain_rows)
    assert all("extras" not in stored_request(r, session=session) for r in plain_rows)
