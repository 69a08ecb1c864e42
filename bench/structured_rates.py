"""Parse rates of every kind of formatted answer with structured outputs on and off.

    eval "$(scripts/ci/vllm.sh)"
    python bench/structured_rates.py --model openai-api/gemma/gemma-3-270m --repeats 2

Sends each kind's request (tests/engines/structured_kinds.py: the instrument's format and
parser) ``--repeats`` times (``attempt`` varies the seed, so repeats are distinct requests)
with structured outputs ``on`` and then ``off``, first request only (no repair), and prints
one table: parsed / asked per kind and mode, and the completion tokens and wall time per mode.
Nothing is cached (no session), so every request reaches the engine. Any spec works,
the in-process ``vllm/<path>`` one too (run it with the vLLM virtualenv's python).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from llm.specs import ModelSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llm.batch import run_chat_batch
from llm.structured import use_structured
from tests.engines.structured_kinds import kinds


def measure(
    model: str,
    mode: str,
    repeats: int,
    concurrency: int,
    skip: tuple[str, ...] = (),
    cap: int | None = None,
) -> tuple[dict[str, int], float, int]:
    """Parsed answers per kind, wall seconds and completion tokens of one mode.

    ``cap`` lowers every kind's token budget to at most that many tokens (a slow engine).
    """
    with use_structured(mode):
        asked = [k for k in kinds() if k.name not in skip for _ in range(repeats)]
        if cap is not None:
            asked = [dataclasses.replace(k, max_tokens=min(k.max_tokens, cap)) for k in asked]
        requests = [
            dataclasses.replace(k.request(), attempt=r % repeats or None)
            for r, k in enumerate(asked)
        ]
        start = time.perf_counter()
        results = run_chat_batch(ModelSpec.parse(model), requests, concurrency=concurrency)
        wall = time.perf_counter() - start
    parsed: dict[str, int] = {}
    tokens = 0
    errors = [res.error for res in results if res.error is not None]
    if errors:  # a request that failed is no parse rate: said, never counted as unparsed
        print(f"{mode}: {len(errors)} request(s) failed: {errors[0]}", file=sys.stderr)
    for kind, req, res in zip(asked, requests, results, strict=True):
        parsed[kind.name] = parsed.get(kind.name, 0) + int(
            res.error is None and kind.parses(req, res)
        )
        tokens += res.completion_tokens or 0
    return parsed, wall, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        help="Leave out a kind (e.g. 'step labels': its prompt exceeds the tiny model's context).",
    )
    parser.add_argument("--modes", default="on,off", help="Modes to measure, in order.")
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="Cap every kind's token budget (a slow CPU)."
    )
    args = parser.parse_args()
    rows = {}
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    for mode in modes:
        rows[mode] = measure(
            args.model, mode, args.repeats, args.concurrency, tuple(args.skip), args.max_tokens
        )
        # said as each mode ends, so a run stopped in the second mode keeps the first
        print(f"{mode}: {json.dumps(rows[mode][0])}", file=sys.stderr, flush=True)
    n = args.repeats
    cap = f", token budgets capped at {args.max_tokens}" if args.max_tokens else ""
    print(f"model {args.model}, {n} request(s) per kind and mode, first reply only{cap}")
    print("| kind | " + " | ".join(f"structured {m}" for m in modes) + " |")
    print("|---|" + "---|" * len(modes))
    for name in rows[modes[0]][0]:
        print(f"| {name} | " + " | ".join(f"{rows[m][0][name]}/{n}" for m in modes) + " |")
    for mode in modes:
        parsed, wall, tokens = rows[mode]
        total = sum(parsed.values())
        asked = n * len(parsed)
        print(
            f"{mode}: {total}/{asked} parsed ({total / asked:.0%}), "
            f"{tokens} completion tokens, {wall:.1f} s"
        )


if __name__ == "__main__":
    main()
