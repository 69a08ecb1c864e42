"""Pages show exception text and echoed input only through ``app.ui.safe.show_plain``.

A source scan finds any other path (``st.error(str(exc))``, an f-string with the exception,
``st.exception``, an alert box fed by ``escape_markdown`` directly), and a page run through
``AppTest`` shows that bold text and a link typed into a field stay literal in the error.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from app.ui.safe import plain_message
from tests.app.apptest_support import open_page, unescape

ROOT = Path(__file__).resolve().parents[2]
SCANNED = sorted([*(ROOT / "app" / "pages").glob("*.py"), *(ROOT / "app" / "ui").glob("*.py")])
#: Streamlit calls that render their argument (alert boxes render Markdown).
RENDERING = {"error", "warning", "info", "success", "toast", "markdown", "write", "caption"}
ALERTS = {"error", "warning", "info", "success", "toast"}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _renders(call: ast.Call) -> str | None:
    """The method name when ``call`` is ``st.X(...)`` / ``col.X(...)`` for a rendering X."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in RENDERING | {"exception"}:
        return None
    receiver = func.value.id if isinstance(func.value, ast.Name) else ""
    return None if "log" in receiver.lower() else func.attr


def violations(source: str, filename: str = "<page>") -> list[str]:
    """Every place ``source`` renders exception text or echoed text around ``show_plain``."""
    tree = ast.parse(source, filename)
    found: list[str] = []
    for handler in (n for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler)):
        if handler.name is None:
            continue
        # the exception and every name assigned from it inside the handler
        tainted = {handler.name}
        for node in (n for stmt in handler.body for n in ast.walk(stmt)):
            if isinstance(node, ast.Assign) and _names(node.value) & tainted:
                tainted |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for call in (n for stmt in handler.body for n in ast.walk(stmt)):
            if isinstance(call, ast.Call) and _renders(call):
                args = [*call.args, *(k.value for k in call.keywords)]
                if any(_names(a) & tainted for a in args):
                    found.append(f"{filename}:{call.lineno} renders exception text directly")
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        kind = _renders(call)
        if kind == "exception":
            found.append(f"{filename}:{call.lineno} st.exception shows a traceback")
        elif kind in ALERTS and call.args:
            inner = {
                n.func.id
                for n in ast.walk(call.args[0])
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            }
            if inner & {"escape_markdown", "str"}:
                found.append(f"{filename}:{call.lineno} alert with escaped text: use show_plain")
    return found


def test_no_page_renders_exception_text_around_the_helper() -> None:
    assert len(SCANNED) > 15
    found = [v for path in SCANNED for v in violations(path.read_text(), path.name)]
    assert found == []


@pytest.mark.parametrize(
    "snippet",
    [
        "try:\n    f()\nexcept E as exc:\n    st.error(str(exc))\n",
        "try:\n    f()\nexcept E as exc:\n    st.warning(f'failed: {exc}')\n",
        "try:\n    f()\nexcept E as e:\n    msg = str(e)\n    col.error(msg)\n",
        "try:\n    f()\nexcept E as exc:\n    st.markdown(escape_markdown(str(exc)))\n",
        "st.exception(err)\n",
        "st.error(escape_markdown(job.error))\n",
    ],
)
def test_the_scan_finds_direct_rendering(snippet: str) -> None:
    assert violations(snippet)


def test_the_scan_passes_the_helper_and_constant_messages() -> None:
    ok = (
        "try:\n    f()\nexcept E as exc:\n    show_plain(exc)\n    log.warning(exc)\n"
        "st.error('SIMULATED DATA')\nst.success(f'{n} rows')\n"
    )
    assert violations(ok) == []


HOSTILE_MODEL = "**bold** [link](http://user:pw@example.org/?api_key=s3cr3t) \x1b[31m"


def _rendered(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def test_bold_and_a_link_in_an_error_stay_literal() -> None:
    at = open_page("runs.py")
    at.text_input[0].set_value(HOSTILE_MODEL)
    next(b for b in at.button if b.label == "Generate and label").click().run()
    assert not at.exception, [e.value for e in at.exception]
    body = at.error[0].value
    html = _rendered(body)
    assert "<strong>" not in html and "<a " not in html and "<em>" not in html
    shown = unescape(body)
    assert "**bold** [link](http://" in shown, shown
    assert "s3cr3t" not in body and "user:pw" not in body
    assert "\x1b" not in body and "\\x1b[31m" in shown
    # the same text through the plain st.error would have rendered bold and a link
    assert "<strong>" in _rendered(HOSTILE_MODEL) and "<a " in _rendered(HOSTILE_MODEL)
    assert plain_message(ValueError()) == "ValueError"
