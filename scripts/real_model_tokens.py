"""Tokens a workspace's model requests used, from its request cache (for cost estimates).

    .venv/bin/python scripts/real_model_tokens.py WORKSPACE [WORKSPACE ...]

Prints one Markdown row per workspace, model and token budget (``max_tokens``: it tells
answers, labels and verdicts apart): requests, prompt tokens, completion tokens,
replies cut at ``max_tokens`` (``finish_reason`` ``length``), and the mean tokens per
request. ``docs/real-model.md`` computes its GPU cost estimate from these numbers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def totals(workspace: Path) -> dict[tuple[str, int], list[int]]:
    """Per model and token budget (``max_tokens``, which tells the tasks apart: answers,
    labels, verdicts): ``[requests, prompt tokens, completion tokens, cut at max_tokens]``."""
    from sqlmodel import select

    from storage.models import LLMCacheEntry
    from storage.repo.requests import cache_request
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    os.environ["DRIFTLENS_WORKSPACE"] = str(workspace)
    os.environ.pop("DRIFTLENS_DB_URL", None)
    out: dict[tuple[str, int], list[int]] = {}
    with open_workspace_session(resolve_settings()) as session:
        for row in session.exec(select(LLMCacheEntry)).all():
            r = row.response or {}
            budget = int(
                (cache_request(row, session=session).get("sampling") or {}).get("max_tokens") or 0
            )
            t = out.setdefault((f"{row.provider}/{row.model}", budget), [0, 0, 0, 0])
            t[0] += 1
            t[1] += int(r.get("prompt_tokens") or 0)
            t[2] += int(r.get("completion_tokens") or 0)
            t[3] += int(r.get("finish_reason") == "length")
    return out


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: real_model_tokens.py WORKSPACE [WORKSPACE ...]")
    print("| workspace | model | max_tokens | requests | prompt tokens | completion tokens "
          "| cut at max_tokens | prompt / request | completion / request |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for ws in sys.argv[1:]:
        for (model, budget), (n, p, c, cut) in sorted(totals(Path(ws)).items()):
            cells = [Path(ws).name, model, budget, n, p, c, cut, f"{p / n:.0f}", f"{c / n:.1f}"]
            print("| " + " | ".join(str(x) for x in cells) + " |")


if __name__ == "__main__":
    main()
