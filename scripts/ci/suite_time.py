"""Where the suite's time goes: seconds per test folder and module from pytest's JUnit files.

Usage: ``python scripts/ci/suite_time.py test-artifacts/junit-*.xml [--top 25]``. Written by
``scripts/test.sh`` for each stream; read when the suite nears its time goal (README).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def times(paths: list[Path]) -> dict[str, float]:
    """Seconds per test module (``tests/x/test_y.py``) over the given JUnit files."""
    out: defaultdict[str, float] = defaultdict(float)
    for path in paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            module = (case.get("classname") or "").split("::")[0]
            # pytest's classname is dotted (tests.x.test_y[.Class]); keep the module part
            parts = [p for p in module.split(".") if not p[:1].isupper()]
            out["/".join(parts) + ".py"] += float(case.get("time") or 0.0)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.junit if not p.is_file()]
    if missing:
        print(f"error: no JUnit file at {', '.join(missing)}", file=sys.stderr)
        return 2
    modules = times(args.junit)
    folders: defaultdict[str, float] = defaultdict(float)
    for module, seconds in modules.items():
        folders[module.rsplit("/", 1)[0]] += seconds
    print(f"total {sum(modules.values()):.0f} s over {len(modules)} modules")
    for title, table in (("folders", folders), ("modules", modules)):
        print(f"\n{title}:")
        for name, seconds in _top(table, args.top):
            print(f"{seconds:8.1f} s  {name}")
    return 0


def _top(table: dict[str, float], n: int) -> list[tuple[str, float]]:
    return sorted(table.items(), key=lambda kv: -kv[1])[:n]


if __name__ == "__main__":
    raise SystemExit(main())
