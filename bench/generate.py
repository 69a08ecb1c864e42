"""Generation throughput through ``run_chat_batch`` against the simulator's HTTP API.

Starts the simulator (``python -m llm.sim.server``) as its own process on 127.0.0.1 so
the server and the client each get a core, sends N distinct requests at the given
concurrency through the real ``openai`` client, then repeats the batch fully cached.

Phases:
  * ``http, no cache``    — pure request throughput (no database);
  * ``two replicas, no cache`` — the same through ``SIM_BASE_URL=URL1,URL2``: two
    simulator processes behind one name, least-in-flight routing (``--server process``);
  * ``http + cache write`` — the real generation path: requests plus SQLite cache rows;
  * ``cached re-run``     — the same batch again: every answer from the cache, no request.

Usage::

    .venv/bin/python bench/generate.py [--n 3000] [--concurrency 64] [--server process|thread]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from llm.specs import ModelSpec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from llm.batch import get_backend, run_chat_batch  # noqa: E402
from llm.types import ChatMessage, ChatRequest, ChatResult, SamplingParams  # noqa: E402

MEMORIES = [
    "",
    " ",
    "Hi. ",
    "I am a teacher.",
    "I use a wheelchair.",
    "The user lost their job last spring. They are retraining as a nurse.",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def process_cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) used so far by a process (``None``: this one)."""
    if pid is None:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


SERVER_PIDS: list[int] = []


@contextmanager
def sim_server(mode: str) -> Iterator[str]:
    """Yield the base URL of a simulator server (own process, or a thread of this one)."""
    if mode == "thread":
        from llm.sim.server import SimServer

        with SimServer(api_key="bench") as url:
            yield url
        return
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llm.sim.server", "--port", str(port), "--api-key", "bench"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/v1"
    SERVER_PIDS.append(proc.pid)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/models", headers={"Authorization": "Bearer bench"})
                break
            except httpx.ConnectError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("simulator server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def build_requests(n: int, offset: int = 0) -> list[ChatRequest]:
    system = ChatMessage("system", "Reason step by step in <step_N> tags, then answer.")
    out = []
    for i in range(offset, offset + n):
        memory = MEMORIES[i % len(MEMORIES)]
        question = f"Question {i // len(MEMORIES)}: should I choose option A or option B?"
        user = f"{memory}\n\n{question}" if memory else question
        out.append(ChatRequest((system, ChatMessage("user", user)), SamplingParams(seed=i)))
    return out


Row = tuple[str, int, float, float, float, float]


def timed(
    name: str, n: int, fn: Callable[..., list[ChatResult]], *args: Any, **kwargs: Any
) -> tuple[Row, list[ChatResult]]:
    """Run ``fn`` and return (name, n, wall s, req/s, client CPU ms/req, server CPU ms/req).

    Server CPU is summed over every simulator process (one, or two with replicas).
    """
    c0, s0 = process_cpu_s(None), sum(process_cpu_s(pid) for pid in SERVER_PIDS)
    start = time.perf_counter()
    results = fn(*args, **kwargs)
    wall = time.perf_counter() - start
    c1, s1 = process_cpu_s(None), sum(process_cpu_s(pid) for pid in SERVER_PIDS)
    return (name, n, wall, n / wall, 1000 * (c1 - c0) / n, 1000 * (s1 - s0) / n), results


def one_round(
    args: argparse.Namespace, backend: Any, offset: int, tmp: Path, replicas: Any = None
) -> list[Row]:
    """Measure the phases once with fresh requests and a fresh workspace."""
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    rows: list[Row] = []
    row, res = timed(
        "http, no cache",
        args.n,
        run_chat_batch,
        backend,
        build_requests(args.n, offset=offset + 10**7),
        concurrency=args.concurrency,
    )
    assert all(r.error is None for r in res), "requests failed"
    rows.append(row)
    if replicas is not None:
        row, res = timed(
            "two replicas, no cache",
            args.n,
            run_chat_batch,
            replicas,
            build_requests(args.n, offset=offset + 2 * 10**7),
            concurrency=args.concurrency,
        )
        assert all(r.error is None for r in res), "requests failed (replicas)"
        assert len(replicas.stats.by_replica) == 2, "a replica was never used"
        rows.append(row)

    requests = build_requests(args.n, offset=offset)
    settings = resolve_settings(workspace=tmp)

    def through_the_cache(label: str) -> list[ChatResult]:
        # each pass in its own session, as two separate command runs would be
        with open_workspace_session(settings) as session:
            row, res = timed(
                label,
                args.n,
                run_chat_batch,
                backend,
                requests,
                session=session,
                concurrency=args.concurrency,
            )
        rows.append(row)
        return res

    res = through_the_cache("http + cache write")
    assert all(r.error is None and not r.cached for r in res), "first run failed"
    res = through_the_cache("cached re-run")
    assert all(r.cached for r in res), "re-run was not fully cached"
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--server", choices=("process", "thread"), default="process")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the median is reported")
    args = parser.parse_args()

    rounds: list[list[Row]] = []
    load_before = os.getloadavg()[0]
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        url = stack.enter_context(sim_server(args.server))
        os.environ["SIM_BASE_URL"] = url
        os.environ["SIM_API_KEY"] = "bench"
        backend = get_backend(ModelSpec.parse("openai-api/sim/sim/default"))
        run_chat_batch(backend, build_requests(128, offset=10**9), concurrency=args.concurrency)
        replicas = None
        if args.server == "process":
            second = stack.enter_context(sim_server(args.server))
            os.environ["SIM_BASE_URL"] = f"{url},{second}"
            replicas = get_backend(ModelSpec.parse("openai-api/sim/sim/default"))
            warm = build_requests(128, offset=10**9)
            run_chat_batch(replicas, warm, concurrency=args.concurrency)
        for k in range(args.repeat):
            workspace = Path(tmp) / f"round{k}"
            workspace.mkdir()
            rounds.append(one_round(args, backend, k * 10**5, workspace, replicas))

    from importlib.metadata import version

    print(f"date: {datetime.now(UTC):%Y-%m-%d %H:%M UTC}")
    print(
        f"command: .venv/bin/python bench/generate.py --n {args.n} "
        f"--concurrency {args.concurrency} --server {args.server} --repeat {args.repeat}"
    )
    print(
        f"machine: {os.cpu_count()} cores (shared), Python {platform.python_version()}, "
        f"openai {version('openai')}, simulator server in a {args.server} "
        f"({len(SERVER_PIDS) or 1} of them); "
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print()
    print(
        "| phase | requests | wall s (median) | requests/s (median) | requests/s (range) "
        "| client CPU ms/req | server CPU ms/req |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    medians: dict[str, float] = {}
    for p, name in enumerate(r[0] for r in rounds[0]):
        walls = [rnd[p][2] for rnd in rounds]
        rates = [rnd[p][3] for rnd in rounds]
        client_ms = statistics.median(rnd[p][4] for rnd in rounds)
        server_ms = statistics.median(rnd[p][5] for rnd in rounds)
        medians[name] = statistics.median(walls)
        server_txt = f"{server_ms:.2f}" if args.server == "process" else "(in client)"
        print(
            f"| {name} | {args.n} | {statistics.median(walls):.2f} | "
            f"{statistics.median(rates):,.0f} | {min(rates):,.0f}–{max(rates):,.0f} | "
            f"{client_ms:.2f} | {server_txt} |"
        )
    print()
    ratio = medians["http + cache write"] / medians["cached re-run"]
    print(f"cached re-run is {ratio:.0f}x faster than the first (cache-writing) run (medians)")
    if args.server == "process":
        client_ms = statistics.median(rnd[0][4] for rnd in rounds)
        server_ms = statistics.median(rnd[0][5] for rnd in rounds)
        print(
            f"CPU-bound ceiling with one free core per process: "
            f"{1000 / max(client_ms, server_ms):,.0f} requests/s "
            "(1000 / the busier process's median CPU ms per request, http, no cache)"
        )


if __name__ == "__main__":
    main()
