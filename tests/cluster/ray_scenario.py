"""The Ray executor on a real local cluster (run inside a loopback-only network namespace).

Started by ``tests/cluster/test_ray_cluster.py`` as
``unshare -n sh -c 'ip link set lo up && python tests/cluster/ray_scenario.py OUT.json'``:
inside the namespace only 127.0.0.1 exists, so Ray (which binds every interface and asks
an outside resolver for a routable address) and everything else stay on loopback.

It starts a throw-away PostgreSQL (``scripts/ci/postgres.sh`` with its own state folder),
two simulator servers with a fixed per-request delay, and a Ray head with two worker
CPUs; runs one small study without Ray (generate, label, analyze) and the same study with
``--executor ray`` while killing, from outside, the worker that holds one shard's lease
after that shard stored some but not all of its responses; then writes what the test
checks to ``OUT.json`` and stops everything it started.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = Path(__file__)
#: A shell in a new network namespace with loopback up, running its arguments.
NETNS = ("unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$1" "$2"')
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
QUESTIONS = 12
PER_SHARD = 3
#: Responses per question: (baseline + 14 noise and age stimuli) x 2 samples.
PER_QUESTION = 30
STUDY = ("--perturbations", "noise,age", "--samples", "2", "--seed", "7")
MODEL = "openai-api/sim/default"


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(BIN / "driftlens"), *args], env=env, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"driftlens {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"not JSON:\n{done.stdout}\n{done.stderr}") from exc


def study(
    env: dict[str, str], questions: Path, run: str, out: Path, *ray: str, analyze: tuple = ()
) -> dict[str, Any]:
    """Generate, label and analyze one run; the drift.csv and stats.json bytes.

    ``analyze``: more options of ``analyze`` (the Ray run: out of core, the statistics in
    Ray tasks).
    """
    cli(env, "questions", "import", str(questions))
    gen = cli(env, "generate", "--model", MODEL, "--run", run, *STUDY, *ray, "--json")
    lab = cli(env, "label", "--run", run, "--labeler", "keywords", *ray, "--json")
    cli(env, "analyze", "--run", run, "--labeler", "keywords", "--out", str(out), "-B", "200",
        *analyze)  # fmt: skip
    return {
        "generate": as_json(gen),
        "label": as_json(lab),
        "drift_csv": (out / "drift.csv").read_text(encoding="utf-8"),
        "stats_json": (out / "stats.json").read_text(encoding="utf-8"),
    }


#: A disposition study's arms: name, model, options (d100 runs out of tokens: re-asks).
DISPOSITION_ARMS = (
    ("ref", "sim/disp-qwen-d000", ("--role", "reference", "--dose", "0", "--max-tokens", "400")),
    ("d100", "sim/disp-qwen-d100", ("--dose", "100", "--max-tokens", "400")),
    ("b-ref", "sim/disp-qwen-d000", ("--role", "reference", "--reasoning", "budget:64")),
    ("b-d100", "sim/disp-qwen-d100", ("--dose", "100", "--reasoning", "budget:64")),
)


def small_batteries(path: Path, batteries: int = 2) -> Path:
    """The sample's first ``batteries`` batteries, three stems each, as a batteries file."""
    import yaml

    from study.disposition.items import BatteryDocument, load_sample_batteries

    doc = load_sample_batteries()
    small = BatteryDocument(
        batteries=[b.model_copy(update={"stems": b.stems[:3]}) for b in doc.batteries[:batteries]]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(small.model_dump(mode="json")), encoding="utf-8")
    return path


def instruments(run: Callable[..., str], out: Path, *ray: str) -> dict[str, Any]:
    """A tiny conflicts run (generated, judged, reported), a tiny sources run and a small
    disposition study (two arms, generated, scored, drawn samples scored again, reported).

    ``run(*args)`` runs ``driftlens ARGS`` and returns its output: here a process on the
    Ray stack's database; the one-process reference runs in the test's own process on
    SQLite (test_ray_cluster.py), which spares the namespace five process starts. Their
    simulators run inside whichever process asks (a Ray worker with ``ray``). A rerun
    asking nothing is checked with the local executor (test_sharded_local.py).
    """
    banks = ("--shard-questions", "8") if ray else ()
    items = ("--shard-items", "2") if ray else ()
    gen = ("conflicts", "generate", "--model", "sim/mc-balanced", "--run", "c")
    gen += ("--distractors", "0,6", "--seed", "7", *ray, *banks)
    src = ("sources", "run", "--model", "sim/src-rigid", "--limit", "4", "--run", "s")
    src += ("--out", str(out / "sources"), "--bootstrap", "200", *ray, *items)
    run("conflicts", "import", "--sample")
    made = {"conflicts": run(*gen), "sources": run(*src)}
    for name, model, opts in DISPOSITION_ARMS[:2]:
        run("disposition", "arms", "add", name, "--model", model, "--study", "d", *opts)
    # one battery, one shard per arm on Ray: the module's time is mostly process starts
    batteries = str(small_batteries(out / "batteries.yaml", batteries=1))
    started = time.monotonic()
    made["disposition"] = run(
        "disposition", "run", "--study", "d", "--judge", "sim/default",
        "--batteries", batteries, "--repeat-share", "0.2", "--grade-share", "0.5",
        "--awareness-share", "0.25", "-B", "200", "--report", str(out / "disposition"),
        *ray, *(("--shard-stems", "3") if ray else ()),
    )  # fmt: skip
    seconds = {"disposition": time.monotonic() - started}
    run("conflicts", "judge", "--run", "c", "--judge", "sim/judge-lenient", *ray, *banks)
    run("conflicts", "report", "--run", "c", "--out", str(out / "conflicts"), "--bootstrap", "200")
    files = {
        f"{d.name}/{f.name}": f.read_text(encoding="utf-8")
        for d in (out / "conflicts", out / "sources", out / "disposition")
        for f in sorted(d.iterdir())
        if f.suffix in (".csv", ".json", ".jsonl")
    }
    return {"made": made, "files": files, "seconds": seconds}


def killer(url: str, stop: threading.Event, record: dict[str, Any]) -> None:
    """Kill the holder of the first shard lease once its shard is partly stored."""
    from sqlalchemy import create_engine, text

    from study.cluster.shards import shard_by_question

    engine = create_engine(url)
    try:
        while not stop.is_set():  # set by the caller at the end, or here after the kill
            time.sleep(0.05)
            with contextlib.suppress(Exception), engine.connect() as conn:  # tables not yet there
                leases = conn.execute(
                    text(
                        "SELECT key, pid FROM work_lease WHERE key LIKE 'generation_run:%#shard:%'"
                    )
                ).all()
                if not leases:
                    continue
                qids = [r[0] for r in conn.execute(text("SELECT id FROM question")).all()]
                shards = shard_by_question(qids, per_shard=PER_SHARD)
                for key, pid in leases:
                    shard = shards[int(key.rsplit(":", 1)[1])]
                    stored = conn.execute(
                        text("SELECT count(*) FROM response WHERE question_id = ANY(:q)"),
                        {"q": list(shard.question_ids)},
                    ).scalar_one()
                    planned = len(shard.question_ids) * PER_QUESTION
                    if 0 < stored < planned:
                        os.kill(int(pid), signal.SIGKILL)
                        record.update(key=key, pid=int(pid), stored=stored, planned=planned)
                        stop.set()
                        break
    finally:
        engine.dispose()


def ray_missing() -> str | None:
    """Why the Ray scenario cannot run on this machine, or None when it can."""
    if os.geteuid() != 0:
        return "the Ray tests need root (a loopback-only network namespace: unshare -n)"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "the Ray tests need unshare and ip (util-linux, iproute2)"
    if importlib.util.find_spec("ray") is None:
        return "Ray is not installed: scripts/setup.sh dev,cluster"
    return None


def main(out_json: Path) -> None:
    from sqlalchemy import create_engine, text

    from study.cluster.local_stack import LocalStack

    timings: dict[str, float] = {}
    t0 = time.monotonic()
    with LocalStack() as stack:
        lines = (ROOT / "study/data/sample_questions.jsonl").read_text(encoding="utf-8")
        questions = stack.tmp / "questions.jsonl"
        questions.write_text("\n".join(lines.splitlines()[:QUESTIONS]) + "\n", encoding="utf-8")
        single_url = stack.postgres("single")
        ray_url = stack.database(single_url, "ray")
        timings["postgres"] = time.monotonic() - t0
        urls = stack.simulators(2, delay_ms=200)
        env = dict(stack.env, SIM_BASE_URL=urls, SIM_API_KEY="open")
        env["DRIFTLENS_WORKSPACE"] = str(stack.tmp / "ws-single")
        env["DRIFTLENS_DB_URL"] = single_url
        timings["simulators"] = time.monotonic() - t0
        single = study(env, questions, "r", stack.tmp / "out-single", "--concurrency", "32")
        timings["single"] = time.monotonic() - t0

        # The head and its workers get the endpoints from their own environment.
        stack.ray_head(cpus=2, env=env)
        timings["ray_start"] = time.monotonic() - t0
        env_ray = stack.ray_env(
            dict(env, DRIFTLENS_DB_URL=ray_url, DRIFTLENS_WORKSPACE=str(stack.tmp / "ws-ray"))
        )
        stop = threading.Event()
        kill: dict[str, Any] = {}
        watcher = threading.Thread(target=killer, args=(ray_url, stop, kill), daemon=True)
        watcher.start()
        shard_args = ("--executor", "ray", "--shard-questions", str(PER_SHARD))
        clustered = study(
            env_ray, questions, "r", stack.tmp / "out-ray", *shard_args, "--concurrency", "4",
            analyze=("--chunk-questions", "5", "--executor", "ray"),
        )  # fmt: skip
        stop.set()
        watcher.join(timeout=5)
        timings["ray"] = time.monotonic() - t0
        clustered["instruments"] = instruments(
            lambda *args: cli(env_ray, *args).stdout, stack.tmp / "inst-ray", "--executor", "ray"
        )
        timings["ray_instruments"] = time.monotonic() - t0
        timings["ray_disposition_s"] = clustered["instruments"]["seconds"]["disposition"]

        engine = create_engine(ray_url)
        with engine.connect() as conn:
            counts = {
                "study_responses": conn.execute(
                    text(
                        "SELECT count(*) FROM response WHERE run_id = "
                        "(SELECT id FROM generation_run WHERE name = 'r')"
                    )
                ).scalar_one(),
                "responses": conn.execute(text("SELECT count(*) FROM response")).scalar_one(),
                "distinct_keys": conn.execute(
                    text(
                        "SELECT count(*) FROM (SELECT DISTINCT run_id, question_id, "
                        "condition, sample FROM response) k"
                    )
                ).scalar_one(),
                "labels": conn.execute(text("SELECT count(*) FROM step_label")).scalar_one(),
                "probes": conn.execute(text("SELECT count(*) FROM source_probe")).scalar_one(),
                "distinct_probes": conn.execute(
                    text(
                        "SELECT count(*) FROM (SELECT DISTINCT run_id, instruction, tier, "
                        "item_id, variant FROM source_probe) k"
                    )
                ).scalar_one(),
                "scores": conn.execute(text("SELECT count(*) FROM judge_score")).scalar_one(),
                "distinct_scores": conn.execute(
                    text(
                        "SELECT count(*) FROM (SELECT DISTINCT response_id, judge_model, kind "
                        "FROM judge_score) k"
                    )
                ).scalar_one(),
                "leases_left": conn.execute(text("SELECT count(*) FROM work_lease")).scalar_one(),
            }
            # each command's job row (a shell command opens its own at its first bar):
            # the coordinator's progress, read from every worker's rows, lands there
            jobs = [
                dict(r._mapping, argv=json.loads(r.argv) if isinstance(r.argv, str) else r.argv)
                for r in conn.execute(
                    text("SELECT argv, state, stage, done, total FROM job ORDER BY id")
                ).all()
            ]
        engine.dispose()
    result = {"single": single, "ray": clustered, "kill": kill, "counts": counts, "jobs": jobs}
    out_json.write_text(json.dumps(result | {"timings": timings}), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
