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
from collections.abc import Sequence
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


def part_modules() -> list[str]:
    """The modules of the parts shared pages load through the registry, not by an import
    statement: every instrument's Runs-page listing and panel (``run_listing``,
    ``runs_panel``)."""
    from driftlens_plugins import instruments

    names: list[str] = []
    for plugin in instruments():
        for ref in (plugin.run_listing, plugin.runs_panel):
            module = ref.partition(":")[0] if ref else None
            if module and module not in names:
                names.append(module)
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


def start_warm_imports(pages_dir: Path, extra: Sequence[str] = ()) -> None:
    """Start the background imports (only the first call of the process does anything).

    Args:
        pages_dir: the page scripts whose import statements are read.
        extra: further modules to import after theirs (:func:`part_modules`).
    """
    if _started.is_set():
        return
    _started.set()
    names = page_imports(pages_dir)
    names += [n for n in extra if n not in names]
    threading.Thread(
        target=_import_all, args=(names,), name="driftlens-warm-imports", daemon=True
    ).start()
