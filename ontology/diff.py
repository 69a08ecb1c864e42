"""Readable differences between two ontology documents.

A diff lists, per root and per leaf, what was added, removed or changed: definition text
(as a word-level diff), triggers, exclusions and examples (as added/removed items).
:func:`word_diff` is also what the Rewrite page uses to highlight changed words.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from ontology.schema import LeafDef, OntologyDoc, RootDef

WordOp = tuple[str, str]  # ("equal" | "insert" | "delete", text)


def word_diff(old: str, new: str) -> list[WordOp]:
    """Word-level diff of two texts as ``(op, text)`` runs (ops: equal, insert, delete)."""
    a, b = old.split(), new.split()
    out: list[WordOp] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(("equal", " ".join(a[i1:i2])))
            continue
        if tag in ("delete", "replace"):
            out.append(("delete", " ".join(a[i1:i2])))
        if tag in ("insert", "replace"):
            out.append(("insert", " ".join(b[j1:j2])))
    return out


def render_word_diff(ops: list[WordOp]) -> str:
    """Plain-text rendering: ``[-removed-]`` and ``{+added+}``."""
    parts = []
    for op, text in ops:
        parts.append(
            text if op == "equal" else f"[-{text}-]" if op == "delete" else f"{{+{text}+}}"
        )
    return " ".join(parts)


@dataclass(frozen=True)
class FieldChange:
    """One changed field of a root or leaf."""

    field: str
    old: str | tuple[str, ...]
    new: str | tuple[str, ...]

    @property
    def added(self) -> tuple[str, ...]:
        """Items in the new list only (list fields)."""
        if isinstance(self.old, tuple) and isinstance(self.new, tuple):
            return tuple(x for x in self.new if x not in self.old)
        return ()

    @property
    def removed(self) -> tuple[str, ...]:
        """Items in the old list only (list fields)."""
        if isinstance(self.old, tuple) and isinstance(self.new, tuple):
            return tuple(x for x in self.old if x not in self.new)
        return ()


@dataclass(frozen=True)
class NodeChange:
    """A root or leaf that was added, removed or changed."""

    kind: str  # "root" | "leaf"
    name: str
    status: str  # "added" | "removed" | "changed"
    root: str
    fields: tuple[FieldChange, ...] = ()


@dataclass(frozen=True)
class OntologyDiff:
    """Every change from ``old`` to ``new``."""

    old_label: str
    new_label: str
    changes: tuple[NodeChange, ...]
    header: tuple[FieldChange, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the two documents have the same content."""
        return not self.changes and not self.header


def _fields(old: RootDef | LeafDef, new: RootDef | LeafDef) -> tuple[FieldChange, ...]:
    out = []
    for name in ("definition", "triggers", "exclusions", "examples"):
        if not hasattr(old, name):
            continue
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            out.append(FieldChange(name, a, b))
    return tuple(out)


def diff_documents(
    old: OntologyDoc, new: OntologyDoc, *, old_label: str = "old", new_label: str = "new"
) -> OntologyDiff:
    """Compare two documents root by root and leaf by leaf (matched by name)."""
    changes: list[NodeChange] = []
    header = tuple(
        FieldChange(f, getattr(old, f), getattr(new, f))
        for f in ("name", "description")
        if getattr(old, f) != getattr(new, f)
    )
    old_roots = {r.name: r for r in old.roots}
    new_roots = {r.name: r for r in new.roots}
    for name in [*old_roots, *(n for n in new_roots if n not in old_roots)]:
        a, b = old_roots.get(name), new_roots.get(name)
        if a is None or b is None:
            changes.append(NodeChange("root", name, "added" if a is None else "removed", name))
            for leaf in (b or a).leaves:  # type: ignore[union-attr]
                changes.append(
                    NodeChange("leaf", leaf.name, "added" if a is None else "removed", name)
                )
            continue
        fields = _fields(a, b)
        if fields:
            changes.append(NodeChange("root", name, "changed", name, fields))
        old_leaves = {leaf.name: leaf for leaf in a.leaves}
        new_leaves = {leaf.name: leaf for leaf in b.leaves}
        for leaf_name in [*old_leaves, *(n for n in new_leaves if n not in old_leaves)]:
            la, lb = old_leaves.get(leaf_name), new_leaves.get(leaf_name)
            if la is None or lb is None:
                status = "added" if la is None else "removed"
                changes.append(NodeChange("leaf", leaf_name, status, name))
            elif fields := _fields(la, lb):
                changes.append(NodeChange("leaf", leaf_name, "changed", name, fields))
    return OntologyDiff(old_label, new_label, tuple(changes), header)


def render_diff(diff: OntologyDiff) -> str:
    """The diff as readable text (what ``driftlens ontology diff`` prints)."""
    lines = [f"--- {diff.old_label}", f"+++ {diff.new_label}"]
    if diff.empty:
        lines.append("(no differences)")
    for f in diff.header:
        lines.append(f"{f.field}: {f.old!r} -> {f.new!r}")
    for c in diff.changes:
        where = c.name if c.kind == "root" else f"{c.root} / {c.name}"
        lines.append(f"{c.kind} {where}: {c.status}")
        for f in c.fields:
            if isinstance(f.old, str) and isinstance(f.new, str):
                lines.append(f"  {f.field}: {render_word_diff(word_diff(f.old, f.new))}")
            else:
                if f.added:
                    lines.append(f"  {f.field} added: {', '.join(f.added)}")
                if f.removed:
                    lines.append(f"  {f.field} removed: {', '.join(f.removed)}")
                if not f.added and not f.removed:
                    lines.append(f"  {f.field}: reordered")
    return "\n".join(lines)
