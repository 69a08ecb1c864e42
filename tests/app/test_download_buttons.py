"""Every download button of the workbench is ``on_click="ignore"``.

With Streamlit's default, a click on a download button reruns the whole page *and* asks the
server for the file. A rerun that starts clears the session's outgoing message queue, keeping
only lifecycle messages (Streamlit 1.67, ``ForwardMsgQueue.clear``), so the answer to a
deferred download (``data=`` a callable) can be dropped when it lands just before the rerun
starts. The button then spins until the browser gives up after 180 s, ignoring clicks: the
Compare "Report (.zip)" and Analysis "Download report.html" hangs of earlier CI runs, both on
buttons without ``on_click="ignore"``. A download never needs a rerun, so every button skips it.
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"


def _download_buttons(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "download_button"
    ]


def _ignores_click(call: ast.Call) -> bool:
    return any(
        k.arg == "on_click" and isinstance(k.value, ast.Constant) and k.value.value == "ignore"
        for k in call.keywords
    )


def test_every_download_button_skips_the_rerun() -> None:
    calls = [(path, call) for path in sorted(APP.rglob("*.py")) for call in _download_buttons(path)]
    assert len(calls) >= 10  # the scan finds the buttons (pages and app/ui)
    rerunning = [
        f"{path.relative_to(APP.parent)}:{call.lineno}"
        for path, call in calls
        if not _ignores_click(call)
    ]
    assert rerunning == [], f"download buttons that rerun the page on a click: {rerunning}"
