"""Enter in a page form's box does not start its job (issue 37, item 13).

Streamlit submits a form when Enter is pressed in one of its text or number boxes: on the
Rounds page, Enter in *Responses* started a round (and a second Enter a second, identical
one). Every form that launches work is drawn with ``enter_to_submit=False``, so only its
button starts it. The AppTest check reads the flag the page sends to the browser; the
source check keeps a new form from forgetting it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.app.apptest_support import open_page

APP = Path(__file__).resolve().parents[2] / "app"


def _walk(node: object) -> list[object]:
    out = [node]
    for child in getattr(node, "children", {}).values():
        out += _walk(child)
    return out


def test_the_rounds_form_is_not_submitted_by_enter() -> None:
    at = open_page("ontology_rounds.py")
    forms = [n for n in _walk(at._tree) if getattr(n, "type", None) == "form"]
    assert forms, "the Rounds page drew no form"
    assert [f.proto.form.enter_to_submit for f in forms] == [False] * len(forms)  # type: ignore[attr-defined]


def test_every_page_form_opts_out_of_enter_to_submit() -> None:
    offending = []
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "form"
            ):
                flags = {k.arg: k.value for k in node.keywords}
                value = flags.get("enter_to_submit")
                if not (isinstance(value, ast.Constant) and value.value is False):
                    offending.append(f"{path.relative_to(APP)}:{node.lineno}")
    assert offending == [], f"forms that Enter submits: {offending}"
