"""The served app imports its pages' modules in the background, once per process."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from app.ui import warm_imports
from app.ui.router import PAGES_DIR
from tests.app.browser_support import (
    ARTIFACTS_ROOT,
    app_env,
    free_port,
    healthy_within,
    start_driftlens,
    stop_driftlens,
)


def test_page_imports_reads_the_import_statements_without_running_pages(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from __future__ import annotations\nimport json, os\n"
        "from study.reasoning.browse import x\nfrom . import sibling\n"
        "raise SystemExit('a page must not run')\n",
        encoding="utf-8",
    )
    (tmp_path / "b.py").write_text(
        "import json\ndef f():\n    import lazily_imported\n", encoding="utf-8"
    )
    assert warm_imports.page_imports(tmp_path) == ["json", "os", "study.reasoning.browse"]


def test_the_real_pages_list_the_modules_their_first_visit_needs() -> None:
    names = warm_imports.page_imports(PAGES_DIR)
    assert {"study.jobs", "study.reasoning.browse", "study.reasoning.stored"} <= set(names)
    assert len(names) == len(set(names))


def test_the_runs_pages_listings_and_panels_are_warmed_too() -> None:
    # loaded through the registry (no import statement in a page): named by the plugins
    from driftlens_plugins import instruments

    names = warm_imports.part_modules()
    for plugin in instruments():
        for ref in (plugin.run_listing, plugin.runs_panel):
            if ref is not None:
                assert ref.partition(":")[0] in names, plugin.name
    assert "app.pages.reasoning_runs" in names and len(names) == len(set(names))


def test_start_runs_once_and_skips_modules_that_fail(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "p.py").write_text(
        "import no_such_module_anywhere\nimport json\n", encoding="utf-8"
    )
    monkeypatch.setattr(warm_imports, "_started", threading.Event())
    seen: list[str] = []
    real = warm_imports.importlib.import_module

    def record(name: str) -> object:
        seen.append(name)
        return real(name)

    monkeypatch.setattr(warm_imports.importlib, "import_module", record)
    warm_imports.start_warm_imports(tmp_path)
    warm_imports.start_warm_imports(tmp_path)  # a second call starts nothing
    for t in threading.enumerate():
        if t.name == "driftlens-warm-imports":
            t.join(timeout=30)
    assert seen == ["no_such_module_anywhere", "json"]  # the failure did not stop the rest


def test_driftlens_app_loads_the_page_modules_before_any_browser_connects(
    workspace: Path,
) -> None:
    """The server process imports the pages' modules when it starts, with no session open.

    Before ``app.ui.serve_process``, the imports began with the first browser session's
    run of the script, so a fresh server's first page shared the cores with them.
    """
    port = free_port()
    log = ARTIFACTS_ROOT / "servers" / f"warm-imports-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    proc = start_driftlens("app", "--port", str(port), env=app_env(workspace), log=log)
    try:
        assert healthy_within(proc, f"http://127.0.0.1:{port}", 90), "app did not start"
        deadline = time.monotonic() + 120  # no page is ever opened: only the process imports
        while warm_imports.LOADED not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the page modules were not loaded in 120 s"
            time.sleep(0.5)
    finally:
        stop_driftlens(proc)
