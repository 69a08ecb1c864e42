"""Import what the pages import, in the background, once per ``driftlens app`` process.

A page's first visit after the server starts used to pay for importing its modules (the
generation, labeling, report and study code: about 2 s on a 2-core machine, so the Runs and
Analysis pages took 4–5 s to render once and 1–2 s afterwards; ``bench/page_render.py``).
``driftlens app`` starts this with its server process (:mod:`app.ui.serve_process`), so a
fresh server's first page finds its modules loaded or loading. The module list is read
from the pages' own import statements, so a new page needs no entry here. Imports are
thread-safe in CPython (a page that imports a module still loading here waits for it); a
module that fails to import is left to the page that needs it, which reports the error
itself.
"""

from __future__ import annotations

import ast
import importlib
import sys
import threading
import time
from pathlib import Path

_started = threading.Event()


def page_imports(pages_dir: Path) -> list[str]:
    """Top-level modules the page files import, in first-seen order (pages are not run)."""
    names: list[str] = []
    for path in sorted(pages_dir.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found = [node.module]
            else:
                continue
            names.extend(n for n in found if n not in names and n != "__future__")
    return names


#: What the server prints once the pages' modules are loaded (a test waits for it).
LOADED = "DriftLens: the pages' modules are loaded"


def _import_all(names: list[str]) -> None:
    start = time.perf_counter()
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # the page importing it shows the error itself
            continue
    # One line in the server's output: a slow first page before it is the imports' doing.
    print(f"{LOADED} ({time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)


def start_warm_imports(pages_dir: Path) -> None:
    """Start the background imports (only the first call of the process does anything)."""
    if _started.is_set():
        return
    _started.set()
    names = page_imports(pages_dir)
    threading.Thread(
        target=_import_all, args=(names,), name="driftlens-warm-imports", daemon=True
    ).start()
