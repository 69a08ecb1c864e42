"""Which versions of an ontology are its main line, and moving an edit onto the newest one.

Versions are numbered in the order they were stored. A version is on the *main line* when it
was made from the main line's newest version of its time (or has no parent): every accepted
rewrite and every edit of the newest version keeps the line going. A version made from an
older one (an edit of driftlens@1 while @2 and @3 exist) is a *branch*, and so is anything
made from a branch. A bare name (``driftlens``) means the main line's newest version, the
head: a branch is used only when it is named (``driftlens@4``), never as a silent default.

:func:`rebase_edit` carries an edit made on an old version over to the head (a three-way
merge per leaf and root), so that saving it does not revert the head's own changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ontology.schema import OntologyDoc
from storage.errors import InputError
from storage.models import OntologyVersion


def main_line(versions: Sequence[OntologyVersion]) -> list[OntologyVersion]:
    """The main line of one ontology's versions, oldest first.

    Args:
        versions: Every stored version of one name (any order).
    """
    line: list[OntologyVersion] = []
    for v in sorted(versions, key=lambda x: x.version):
        if not line or v.parent_id is None or v.parent_id == line[-1].id:
            line.append(v)
    return line


def main_head(versions: Sequence[OntologyVersion]) -> OntologyVersion | None:
    """The newest version of the main line (``None`` for no versions)."""
    line = main_line(versions)
    return line[-1] if line else None


def branch_of(version: OntologyVersion, versions: Sequence[OntologyVersion]) -> str | None:
    """``"branch of @N"`` when ``version`` is off the main line (its parent's number), else None.

    Args:
        version: One version.
        versions: Every version of its name.
    """
    if any(v.id == version.id for v in main_line(versions)):
        return None
    parent = next((v for v in versions if v.id == version.parent_id), None)
    return f"branch of @{parent.version}" if parent is not None else "branch"


def _nodes(doc: OntologyDoc) -> dict[tuple[str, str], dict[str, Any]]:
    """``(root, "")`` -> a root's own fields and ``(root, leaf)`` -> a leaf's fields."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for root in doc.model_dump(mode="json")["roots"]:
        out[(root["name"], "")] = {k: v for k, v in root.items() if k != "leaves"}
        for leaf in root["leaves"]:
            out[(root["name"], leaf["name"])] = leaf
    return out


def _where(node: tuple[str, str]) -> str:
    return f"leaf {node[1]!r}" if node[1] else f"root {node[0]!r}"


def rebase_edit(base: OntologyDoc, edited: OntologyDoc, head: OntologyDoc) -> OntologyDoc:
    """``head`` with the changes that turned ``base`` into ``edited`` (per leaf and root).

    A leaf (or root) the edit changed is taken from the edit; every other node stays as the
    head has it, so the head's own changes since ``base`` are kept.

    Raises:
        InputError: the edit adds, removes or renames leaves or roots (only a branch can hold
            that), or the head changed a node the edit also changed, differently (the message
            names it).
    """
    old, new, top = _nodes(base), _nodes(edited), _nodes(head)
    if set(old) != set(new):
        raise InputError(
            "the edit adds, removes or renames leaves or roots; it cannot be moved onto the "
            "newest version: save it as a branch on purpose, or make it on the newest version"
        )
    data = head.model_dump(mode="json")
    by_node = {(r["name"], ""): r for r in data["roots"]}
    by_node.update({(r["name"], leaf["name"]): leaf for r in data["roots"] for leaf in r["leaves"]})
    for node, fields in new.items():
        if fields == old[node]:
            continue  # the edit did not touch it: the head's text stays
        if node not in top:
            raise InputError(f"the newest version has no {_where(node)} any more; edit it there")
        if top[node] not in (old[node], fields):
            raise InputError(
                f"the newest version also changed {_where(node)}; make this edit on the "
                "newest version (or save it as a branch on purpose)"
            )
        target = by_node[node]
        target.update({k: v for k, v in fields.items() if k != "leaves"})
    return OntologyDoc.model_validate(data)
