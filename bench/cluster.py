"""``generate --executor ray`` with 1, 2 and 4 workers against latency-bound endpoints.

A benchmark, not a test. Run it as root inside a loopback-only network namespace (Ray
binds every interface)::

    unshare -n sh -c 'ip link set lo up && nice -n 19 .venv/bin/python bench/cluster.py'

It starts its own PostgreSQL, ``--endpoints`` simulator servers that wait ``--delay-ms``
before each answer (standing in for GPU nodes: the work is waiting, not computing), and
for each worker count a fresh Ray head with that many CPUs; then one ``driftlens generate
--executor ray`` per worker count into a fresh database. Measured per worker count:

* throughput: responses over the span of their ``created_at`` stamps (the generation
  itself, without Ray's start-up), and its ratio to 1 worker x the count (linear = 1.0);
* client CPU per response: user + system CPU of every Ray worker process (``/proc``),
  before and after, over the responses; and the coordinator's (the CLI process).

Each worker sends ``--concurrency`` requests at a time, so one worker's ceiling is
``concurrency / delay``; the endpoints' capacity is unbounded here (the simulator sleeps
without holding a thread), so linear scaling is the expectation up to the client CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_CLI = "import sys; from app.cli import main; sys.argv[0] = 'driftlens'; sys.exit(main())"
_TICK = os.sysconf("SC_CLK_TCK")


def ray_worker_cpu() -> float:
    """CPU seconds (user + system) of every Ray worker process now alive."""
    total = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"default_worker.py" not in cmd and not cmd.startswith(b"ray::"):
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / _TICK
    return total


def one(
    stack: Any, *, workers: int, env: dict[str, str], url: str, args: argparse.Namespace
) -> dict[str, Any]:
    """One ``generate --executor ray`` run with ``workers`` worker CPUs."""
    from sqlalchemy import create_engine, text

    stack.ray_head(cpus=workers, env=env)
    run_env = stack.ray_env(dict(env, DRIFTLENS_DB_URL=url))
    run_env["DRIFTLENS_WORKSPACE"] = str(stack.tmp / f"ws-{workers}")
    subprocess.run(
        [sys.executable, "-c", _CLI, "questions", "import", "--sample"],
        env=run_env,
        check=True,
        capture_output=True,
    )
    cmd = [sys.executable, "-c", _CLI, "generate", "--model", "openai-api/sim/default"]
    cmd += ["--run", "bench", "--perturbations", args.perturbations, "--samples", "2"]
    cmd += ["--executor", "ray", "--shard-questions", str(args.shard_questions)]
    cmd += ["--concurrency", str(args.concurrency), "--json"]
    before = ray_worker_cpu()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    worker_cpu = ray_worker_cpu() - before
    out = proc.stdout.read().decode() if proc.stdout else ""
    if status != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"generate failed:\n{out[-2000:]}\n{err[-2000:]}")
    summary = json.loads(out)
    engine = create_engine(url)
    with engine.connect() as conn:
        n, span = conn.execute(
            text(
                "SELECT count(*), extract(epoch FROM max(created_at) - min(created_at)) "
                "FROM response"
            )
        ).one()
    engine.dispose()
    return {
        "workers": workers,
        "responses": int(n),
        "failed": summary["failed"],
        "wall_s": round(wall, 1),
        "span_s": round(float(span), 2),
        "responses_per_s": round(int(n) / float(span), 1),
        "worker_cpu_ms_per_response": round(1000 * worker_cpu / int(n), 2),
        "coordinator_cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--endpoints", type=int, default=2)
    parser.add_argument("--delay-ms", type=float, default=250.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--perturbations", default="noise,age,bereavement")
    parser.add_argument("--shard-questions", type=int, default=3)
    args = parser.parse_args()
    from study.cluster.local_stack import LocalStack

    rows = []
    with LocalStack() as stack:
        base_url = stack.postgres("bench0")
        sims = stack.simulators(args.endpoints, delay_ms=args.delay_ms)
        env = dict(stack.env, SIM_BASE_URL=sims, SIM_API_KEY="open")
        for w in [int(x) for x in args.workers.split(",")]:
            url = stack.database(base_url, f"bench_w{w}")
            rows.append(one(stack, workers=w, env=env, url=url, args=args))
            print(json.dumps(rows[-1]), flush=True)
    first = rows[0]["responses_per_s"] / rows[0]["workers"]
    print("\n| workers | responses | span | responses/s | vs linear | worker CPU/response |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ratio = r["responses_per_s"] / (first * r["workers"])
        print(
            f"| {r['workers']} | {r['responses']:,} | {r['span_s']} s | "
            f"{r['responses_per_s']} | {ratio:.2f} | {r['worker_cpu_ms_per_response']} ms |"
        )


if __name__ == "__main__":
    main()
