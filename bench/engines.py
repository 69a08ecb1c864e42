"""The workbench's request path against a real engine vs a plain ``openai`` loop.

Needs a served model (``eval "$(scripts/ci/vllm.sh)"``: Gemma 3 270M on vLLM-CPU). Three
figures, each measured in this run:

* **generate**: ``run_generation`` (what ``driftlens generate`` runs: plan, request cache,
  concurrency, retries, response rows) vs a plain asyncio loop over ``openai.AsyncOpenAI``
  sending the *same* requests (read back from the request cache the library wrote, bodies
  checked equal to the backend's) at the same concurrency. The ratio of throughputs is the
  figure (goal ≥ 0.95).
* **label**: ``label_run`` with an LLM labeler vs the same plain loop over the labeler's own
  requests (goal ≥ 0.9).
* **cached rerun**: the same generation again under a new run name with the same seed:
  every answer comes from the request cache (speed-up vs the first run).

Order effects are controlled: an untimed warm-up fills the engine's prefix cache, then the
timed phases run plain, library, library, plain (each library run in a fresh workspace, so
no answer is cached), and the ratio uses the mean of each pair.

Usage::

    eval "$(scripts/ci/vllm.sh)"
    .venv/bin/python bench/engines.py [--service gemma --model gemma-3-270m] \
        [--questions 8 --max-tokens 16 --concurrency 8] [--label-responses 4] \
        [--label-repeats 3] [--skip-generate | --skip-label]
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import functools
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from llm.backends import get_backend  # noqa: E402
from llm.seeds import request_seed  # noqa: E402
from llm.types import ChatMessage, ChatRequest, SamplingParams  # noqa: E402


@dataclass(frozen=True)
class Phase:
    """One timed phase."""

    name: str
    requests: int
    seconds: float
    completion_tokens: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else float("inf")


@contextmanager
def workspace() -> Iterator[Path]:
    """A fresh workspace (SQLite) for one library phase."""
    old = os.environ.get("DRIFTLENS_WORKSPACE")
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as tmp:
        os.environ["DRIFTLENS_WORKSPACE"] = tmp
        os.environ.pop("DRIFTLENS_DB_URL", None)
        try:
            yield Path(tmp)
        finally:
            if old is None:
                os.environ.pop("DRIFTLENS_WORKSPACE", None)
            else:
                os.environ["DRIFTLENS_WORKSPACE"] = old


def session_scope() -> Any:
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    return open_workspace_session(resolve_settings())


def import_questions(n: int) -> None:
    """The first ``n`` shipped sample questions."""
    from study.questions import import_questions as do_import

    sample = ROOT / "study" / "data" / "sample_questions.jsonl"
    lines = sample.read_text(encoding="utf-8").splitlines()[:n]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        fh.write("\n".join(lines) + "\n")
        path = Path(fh.name)
    try:
        with session_scope() as session:
            do_import(path, session=session)
    finally:
        path.unlink()


def cached_requests(provider: str = "openai-api") -> list[ChatRequest]:
    """Every request the library sent, read back from the request cache (exact payloads)."""
    from sqlmodel import select

    from storage.models import LLMCacheEntry
    from storage.repo.requests import cache_request

    out = []
    with session_scope() as session:
        rows = session.exec(select(LLMCacheEntry).where(LLMCacheEntry.provider == provider))
        for row in rows.all():
            p = cache_request(row, session=session)
            extras = p.get("extras") or {}
            if "stop" in extras and extras["stop"] is not None:
                extras = {**extras, "stop": tuple(extras["stop"])}
            out.append(
                ChatRequest(
                    tuple(ChatMessage(m["role"], m["content"]) for m in p["messages"]),
                    SamplingParams.model_validate(p["sampling"]),
                    sample_index=p["sample_index"],
                    **extras,
                )
            )
    return out


def plain_body(model: str, r: ChatRequest) -> dict[str, Any]:
    """The request body a plain client would write by hand (no workbench code)."""
    sp = r.sampling
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in r.messages],
        "temperature": sp.temperature,
        "top_p": sp.top_p,
        "max_tokens": sp.max_tokens,
    }
    seed = request_seed(r)
    if seed is not None:
        body["seed"] = seed
    if sp.top_k is not None:
        body["top_k"] = sp.top_k
    if sp.repetition_penalty is not None:
        body["repetition_penalty"] = sp.repetition_penalty
    return body


async def plain_loop(
    base_url: str, key: str, bodies: list[dict[str, Any]], concurrency: int
) -> tuple[float, int]:
    """Send the bodies with ``openai.AsyncOpenAI`` at ``concurrency``; (seconds, tokens)."""
    import openai  # noqa: TID251 - the plain baseline uses the client directly, by design

    client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=900)
    gate = asyncio.Semaphore(concurrency)
    tokens = 0

    async def one(body: dict[str, Any]) -> None:
        nonlocal tokens
        standard = {k: v for k, v in body.items() if k not in ("top_k", "repetition_penalty")}
        extra = {k: v for k, v in body.items() if k in ("top_k", "repetition_penalty")}
        async with gate:
            resp = await client.chat.completions.create(**standard, extra_body=extra)
        tokens += resp.usage.completion_tokens if resp.usage else 0

    start = time.perf_counter()
    await asyncio.gather(*(one(b) for b in bodies))
    elapsed = time.perf_counter() - start
    await client.close()
    return elapsed, tokens


def run_plain(name: str, args: argparse.Namespace, reqs: list[ChatRequest]) -> Phase:
    base_url = os.environ[f"{args.service.upper()}_BASE_URL"]
    key = os.environ[f"{args.service.upper()}_API_KEY"]
    backend = get_backend(f"openai-api/{args.service}/{args.model}")
    bodies = [plain_body(args.model, r) for r in reqs]
    for body, r in zip(bodies, reqs, strict=True):
        # Same requests on the wire: what the workbench would send for each request.
        assert body == backend.request_body(r), "plain body differs from the workbench's"  # type: ignore[attr-defined]
    seconds, tokens = asyncio.run(plain_loop(base_url, key, bodies, args.concurrency))
    return Phase(name, len(reqs), seconds, tokens)


def generation(args: argparse.Namespace, run: str) -> tuple[float, int, int]:
    """One ``run_generation`` in the current workspace: (seconds, answered, tokens)."""
    from sqlmodel import select

    from storage.models import Response
    from study.reasoning.generation import GenerationOptions, run_generation

    options = GenerationOptions(
        model=f"openai-api/{args.service}/{args.model}",
        run=run,
        perturbations="none",
        samples=args.samples,
        concurrency=args.concurrency,
        max_tokens=args.max_tokens,
        seed=args.seed,
    )
    start = time.perf_counter()
    with session_scope() as session:
        summary = run_generation(options, session=session)
    elapsed = time.perf_counter() - start
    with session_scope() as session:
        tokens = sum(r.completion_tokens or 0 for r in session.exec(select(Response)).all())
    return elapsed, summary.succeeded + summary.failed, tokens


def labeling(args: argparse.Namespace, run: str) -> tuple[float, int]:
    """One ``label_run`` with the LLM labeler: (seconds, requests sent)."""
    from study.reasoning.trajectories import label_run

    start = time.perf_counter()
    with session_scope() as session:
        label_run(run, f"llm:openai-api/{args.service}/{args.model}", session=session)
    elapsed = time.perf_counter() - start
    return elapsed, len(cached_requests())


def sim_run(args: argparse.Namespace, run: str) -> None:
    """A simulated run whose responses have steps, for the labeling phases."""
    from study.reasoning.generation import GenerationOptions, run_generation

    with session_scope() as session:
        run_generation(
            GenerationOptions(
                model="sim/default", run=run, perturbations="none", samples=1, seed=args.seed
            ),
            session=session,
        )


def bench_generate(args: argparse.Namespace) -> list[Phase]:
    phases: list[Phase] = []
    with workspace():
        import_questions(args.questions)
        generation(args, "warm-up")  # untimed: fills the engine's prefix cache
        reqs = cached_requests()
    print(f"generate: {len(reqs)} requests, max_tokens {args.max_tokens}", file=sys.stderr)
    phases.append(run_plain("plain openai loop (1)", args, reqs))
    for i in (1, 2):
        with workspace():
            import_questions(args.questions)
            seconds, n, tokens = generation(args, "bench")
            phases.append(Phase(f"driftlens generate ({i})", n, seconds, tokens))
            if i == 2:
                again, n2, _ = generation(args, "bench-rerun")
                phases.append(Phase("generate, cached rerun", n2, again, 0))
    phases.append(run_plain("plain openai loop (2)", args, reqs))
    return phases


def bench_label(args: argparse.Namespace) -> list[list[Phase]]:
    """``--label-repeats`` repetitions of plain, library, library, plain (fresh workspaces)."""
    with workspace():
        import_questions(args.label_responses)
        sim_run(args, "steps")
        labeling(args, "steps")  # untimed warm-up; its cache holds the exact requests
        reqs = cached_requests()
    print(f"label: {len(reqs)} labeler requests", file=sys.stderr)
    reps: list[list[Phase]] = []
    for rep in range(1, args.label_repeats + 1):
        phases = [run_plain("plain openai loop (1)", args, reqs)]
        for i in (1, 2):
            with workspace():
                import_questions(args.label_responses)
                sim_run(args, "steps")
                seconds, sent = labeling(args, "steps")
                assert sent == len(reqs), (sent, len(reqs))  # the same requests as the warm-up
                phases.append(Phase(f"driftlens label ({i})", len(reqs), seconds, 0))
        phases.append(run_plain("plain openai loop (2)", args, reqs))
        print(f"label repetition {rep}: {ratio(phases, 'driftlens label'):.3f}x", file=sys.stderr)
        reps.append(phases)
    return reps


def ratio(phases: list[Phase], library: str) -> float:
    lib = [p.seconds for p in phases if p.name.startswith(library)]
    plain = [p.seconds for p in phases if p.name.startswith("plain")]
    # Same requests in every phase: the throughput ratio is the inverse time ratio.
    return (sum(plain) / len(plain)) / (sum(lib) / len(lib))


def table(title: str, phases: list[Phase], extra: Callable[[], list[str]]) -> str:
    lines = [f"### {title}", "", "| phase | requests | seconds | requests/s | completion tokens |"]
    lines.append("|---|---:|---:|---:|---:|")
    for p in phases:
        lines.append(
            f"| {p.name} | {p.requests} | {p.seconds:.1f} | {p.rps:.3f} | {p.completion_tokens} |"
        )
    return "\n".join([*lines, "", *extra(), ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--service", default="gemma")
    parser.add_argument("--model", default="gemma-3-270m")
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--label-responses", type=int, default=2)
    parser.add_argument("--labeler-max-tokens", type=int, default=16)
    parser.add_argument("--label-repeats", type=int, default=1)
    parser.add_argument("--skip-label", action="store_true")
    parser.add_argument("--skip-generate", action="store_true")
    args = parser.parse_args()
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 <pid> prints where a slow run is
    for var in (f"{args.service.upper()}_BASE_URL", f"{args.service.upper()}_API_KEY"):
        if not os.environ.get(var):
            sys.exit(f'{var} is not set: eval "$(scripts/ci/vllm.sh)" first')
    os.environ["DRIFTLENS_LABELER_MAX_TOKENS"] = str(args.labeler_max_tokens)
    os.environ["DRIFTLENS_LABEL_CONCURRENCY"] = str(args.concurrency)  # same as the plain loop
    os.environ.setdefault("DRIFTLENS_REQUEST_TIMEOUT_S", "900")

    out = [
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.node()} "
        f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}): "
        f"`{' '.join(['bench/engines.py', *sys.argv[1:]])}`",
        "",
    ]
    gen: list[Phase] = []
    if not args.skip_generate:
        gen = bench_generate(args)
        first = next(p for p in gen if p.name == "driftlens generate (2)")
        rerun = next(p for p in gen if p.name == "generate, cached rerun")
        out.append(
            table(
                f"Generation: openai-api/{args.service}/{args.model}, "
                f"concurrency {args.concurrency}",
                gen,
                lambda: [
                    "generate / plain loop throughput: "
                    f"**{ratio(gen, 'driftlens generate'):.3f}×**; cached rerun "
                    f"{first.seconds / rerun.seconds:.0f}× faster than the first run."
                ],
            )
        )
    if not args.skip_label:
        reps = bench_label(args)
        ratios = [ratio(phases, "driftlens label") for phases in reps]
        for rep, phases in enumerate(reps, start=1):
            out.append(
                table(
                    f"LLM labeling, repetition {rep}: llm:openai-api/{args.service}/{args.model}, "
                    f"labeler max_tokens {args.labeler_max_tokens}, concurrency {args.concurrency}",
                    phases,
                    functools.partial(
                        lambda r: [f"label / plain loop throughput: **{r:.3f}×**"], ratios[rep - 1]
                    ),
                )
            )
        everything = [p for phases in reps for p in phases]
        out.append(
            f"label / plain loop over {len(reps)} repetitions: "
            f"**{ratio(everything, 'driftlens label'):.3f}×** (all phases pooled); per "
            f"repetition min {min(ratios):.3f}×, median {statistics.median(ratios):.3f}×, "
            f"max {max(ratios):.3f}×\n"
        )
    out.append(f"Load at the end: {os.getloadavg()[0]:.1f}.")
    print("\n".join(out))
    print(json.dumps({"phases": [p.__dict__ for p in gen]}), file=sys.stderr)


if __name__ == "__main__":
    main()
