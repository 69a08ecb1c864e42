"""Import what the pages import, in the background, once per ``driftlens app`` process.

A page's first visit after the server starts used to pay for importing its modules (the
generation, labeling, report and study code: about 2 s on a 2-core machine, so the Runs and
Analysis pages took 4–5 s to render once and 1–2 s afterwards; ``bench/page_render.py``).
The served router starts this once; by the time a researcher opens a second page its
modules are loaded. The module list is read from the pages' own import statements, so a
new page needs no entry here. Imports are thread-safe in CPython (a page that imports a
module still loading here waits for it); a module that fails to import is left to the page
that needs it, which reports the error itself.
"""

from __future__ import annotations

import ast
import importlib
import threading
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


def _import_all(names: list[str]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # the page importing it shows the error itself
            continue


def start_warm_imports(pages_dir: Path) -> None:
    """Start the background imports (only the first call of the process does anything)."""
    if _started.is_set():
        return
    _started.set()
    names = page_imports(pages_dir)
    threading.Thread(
        target=_import_all, args=(names,), name="driftlens-warm-imports", daemon=True
    ).start()
