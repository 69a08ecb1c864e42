"""Run by ``tests/engines/test_inprocess_refusal.py`` with the vLLM virtualenv's python.

Sends three batches to the in-process engine (``vllm/<tiny folder>``) and prints one JSON
object describing what came back:

1. ``auto``: a request whose format the engine refuses (a regex xgrammar cannot compile,
   the engine's own validation path), with a plain request in the same batch;
2. ``after``: a valid format on the same engine, which now goes without its format;
3. ``on``: the refused format again in mode ``on``, on a fresh registry.

Usage: ``python tests/engines/inprocess_refusal.py <tiny model folder>``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

from llm.structured import SUPPORT, ResponseFormat
from llm.types import ChatBatch, ChatMessage, ChatRequest, SamplingParams
from llm.vllm_backend import VLLMBackend
from llm.vllm_engine import shutdown_engines

#: Unbalanced: neither Python nor xgrammar can compile it.
BAD = ResponseFormat("regex", "bad_regex", pattern="([A-D]")
GOOD = ResponseFormat("choice", "letter", choices=("A", "B", "C", "D"))


def _request(fmt: ResponseFormat | None, mode: str | None, seed: int) -> ChatRequest:
    return ChatRequest(
        (ChatMessage("user", "Pick one letter: A, B, C or D."),),
        SamplingParams(temperature=0.0, max_tokens=4, seed=seed),
        response_format=fmt,
        structured=mode,
    )


def _answer(backend: VLLMBackend, requests: list[ChatRequest]) -> list[dict[str, Any]]:
    results = asyncio.run(backend.answer_batch(ChatBatch(requests, concurrency=1)))
    return [
        {
            "text": r.text,
            "error": r.error,
            "error_kind": r.error_kind,
            "flags": list(r.output_flags),
            "completion_tokens": r.completion_tokens,
        }
        for r in results
    ]


def main(folder: str) -> None:
    warnings: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(record.getMessage())

    logging.getLogger("driftlens.structured").addHandler(Keep())
    backend = VLLMBackend(f"vllm/{folder}", folder, engine_kwargs={"max_model_len": 2048})
    out: dict[str, Any] = {"endpoint": backend.endpoint()}
    # the plain request first: it is added to the engine before the refusal, then aborted
    out["auto"] = _answer(backend, [_request(None, None, 2), _request(BAD, "auto", 1)])
    out["refused"] = SUPPORT.get(backend.endpoint()).refused
    out["after"] = _answer(backend, [_request(GOOD, "auto", 3)])
    SUPPORT.clear()
    try:
        out["on"] = _answer(backend, [_request(BAD, "on", 4)])
    except Exception as exc:  # the run-stopping error a command prints in one line
        out["on_error"] = f"{type(exc).__name__}: {exc}"
    out["warnings"] = warnings
    shutdown_engines()
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
