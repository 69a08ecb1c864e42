"""What one ``driftlens`` call costs the test suite: the conversion and the process start.

``python bench/cli_costs.py [--calls 20] [--starts 6]`` measures, in one run:

* **conversion**: ``CliRunner().invoke`` of ``driftlens questions list`` in this process,
  ``--calls`` times with the application built and converted to its click command on each
  call (what ``CliRunner().invoke(build_app(), ...)`` does), then ``--calls`` times with
  one converted application reused (what ``tests/cli_invoke.py`` does). CPU seconds of this
  process per call (``time.process_time``) and the ratio.
* **start**: ``--starts`` processes of ``driftlens --help`` and of ``driftlens questions
  list`` as the console script starts them, then the same with ``scipy.stats`` imported
  first (what every start paid before ``driftlens_core.bootstrap`` imported it on demand).
  User + sys CPU seconds of the child per start (``RUSAGE_CHILDREN``) and the ratio.

Each workspace is a fresh temporary folder (an empty, migrated database). The load average
is printed first: the machine is shared, CPU seconds are the steadier figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typer import Typer
    from typer._click import Command

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ARGS = ["questions", "list"]


def _conversion(calls: int) -> tuple[float, float]:
    """CPU seconds per call: converted on every call, then converted once."""
    import typer.main
    import typer.testing
    from typer.testing import CliRunner

    from app.cli.root import build_app

    CliRunner().invoke(build_app(), ARGS)  # the imports, paid once outside both loops
    start = time.process_time()
    for _ in range(calls):
        result = CliRunner().invoke(build_app(), ARGS)
        assert result.exit_code == 0, result.output
    each = (time.process_time() - start) / calls

    app = build_app()
    command = typer.main.get_command(app)
    convert = typer.testing._get_command

    def cached(typer_instance: Typer) -> Command:
        return command if typer_instance is app else convert(typer_instance)

    typer.testing._get_command = cached
    try:
        start = time.process_time()
        for _ in range(calls):
            result = CliRunner().invoke(app, ARGS)
            assert result.exit_code == 0, result.output
        once = (time.process_time() - start) / calls
    finally:
        typer.testing._get_command = convert
    return each, once


def _start_cpu(argv: list[str], starts: int, env: dict[str, str]) -> float:
    """Mean user + sys CPU seconds of ``starts`` runs of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(starts):
        subprocess.run(argv, env=env, capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return used / starts


def main() -> None:
    """Print both tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--starts", type=int, default=6)
    opts = parser.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        os.environ["DRIFTLENS_WORKSPACE"] = str(Path(tmp) / "ws")
        os.environ.pop("DRIFTLENS_DB_URL", None)
        each, once = _conversion(opts.calls)
        print(f"\n| in-process call ({' '.join(ARGS)}) | CPU per call | ratio |")
        print("|---|---:|---:|")
        print(f"| converted once, reused | {once:.3f} s | 1.00 |")
        print(f"| converted on every call | {each:.3f} s | {each / once:.2f} |")

        env = dict(os.environ)
        script = str(Path(sys.executable).with_name("driftlens"))
        print("\n| process start | on demand (now) | scipy.stats at start | ratio |")
        print("|---|---:|---:|---:|")
        for args in (["--help"], ARGS):
            plain = _start_cpu([script, *args], opts.starts, env)
            eager = _start_cpu(
                [sys.executable, "-c",
                 "import sys, scipy.stats; from app.cli import main; "
                 f"sys.argv = ['driftlens', *{args!r}]; main()"],
                opts.starts, env,
            )  # fmt: skip
            print(f"| `driftlens {' '.join(args)}` | {plain:.2f} s | {eager:.2f} s | "
                  f"{eager / plain:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
