"""The perturbation catalog document (SPEC §3): pydantic models, YAML and CSV formats.

A catalog is a list of categories; each category holds stimuli (memory lines). Keys are
``{condition_class}/{category}/{n}`` with ``n`` the 1-based position in the category list
unless a stimulus gives its ``n`` explicitly, so appending keeps existing keys stable.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from storage.errors import InputError
from storage.hashing import content_hash
from storage.yaml_input import load_yaml_mapping, read_text_file, validation_error
from study.safe_csv import csv_text, unguard_cell

ConditionClass = Literal["noise", "attribute", "life_event", "other"]
CONDITION_CLASSES: tuple[str, ...] = ("noise", "attribute", "life_event", "other")
DEFAULT_CATALOG_FILE = "default.yaml"
CSV_COLUMNS: tuple[str, ...] = ("key", "condition_class", "category", "text")

_CATEGORY_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_KEY_RE = re.compile(r"^(?P<cls>[a-z_]+)/(?P<cat>[a-z][a-z0-9_]*)/(?P<n>[1-9][0-9]*)$")


class Stimulus(BaseModel):
    """One memory line; ``n`` (its key suffix) defaults to the position in the category."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int | None = Field(default=None, ge=1)
    text: str = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _from_plain_string(cls, value: Any) -> Any:
        # The YAML file lists most stimuli as plain strings.
        return {"text": value} if isinstance(value, str) else value


class CatalogCategory(BaseModel):
    """A category of one condition class with its stimuli."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    condition_class: ConditionClass
    category: str
    label: str = ""
    stimuli: tuple[Stimulus, ...] = Field(min_length=1)

    @field_validator("category")
    @classmethod
    def _category_is_a_slug(cls, value: str) -> str:
        if not _CATEGORY_RE.match(value):
            raise ValueError("category must be lower-case letters, digits and '_' (e.g. 'age')")
        return value

    @model_validator(mode="after")
    def _numbers_unique(self) -> CatalogCategory:
        numbers = self.numbers()
        if len(set(numbers)) != len(numbers):
            raise ValueError(f"duplicate stimulus numbers in category {self.category!r}")
        return self

    def numbers(self) -> list[int]:
        """The key suffix of every stimulus, in list order."""
        return [s.n if s.n is not None else i for i, s in enumerate(self.stimuli, start=1)]


class CatalogDocument(BaseModel):
    """A whole catalog as written in YAML (``version`` is the document schema version)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    name: str = Field(min_length=1)
    note: str = ""
    categories: tuple[CatalogCategory, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _categories_unique(self) -> CatalogDocument:
        seen: set[tuple[str, str]] = set()
        for cat in self.categories:
            ident = (cat.condition_class, cat.category)
            if ident in seen:
                raise ValueError(f"category {cat.condition_class}/{cat.category} appears twice")
            seen.add(ident)
        return self

    def entries(self) -> tuple[CatalogEntry, ...]:
        """Flatten the document into keyed entries, in document order."""
        out: list[CatalogEntry] = []
        for cat in self.categories:
            for n, stim in zip(cat.numbers(), cat.stimuli, strict=True):
                key = f"{cat.condition_class}/{cat.category}/{n}"
                out.append(CatalogEntry(key, cat.condition_class, cat.category, stim.text))
        return tuple(out)

    def content_hash(self) -> str:
        """SHA-256 of the entries (keys, classes, categories, texts); labels and note excluded."""
        return entries_hash(self.entries())


@dataclass(frozen=True)
class CatalogEntry:
    """One perturbation as stored: stable key, class, category and the memory line."""

    key: str
    condition_class: str
    category: str
    text: str


def entries_hash(entries: Iterable[CatalogEntry]) -> str:
    """Hash entries order-independently, exactly as the stored ``content_hash``.

    Same items as ``storage.repo.perturbations.catalog_hash``, so a document can be
    compared with a stored version without touching the database.
    """
    rows = sorted((e.key, e.condition_class, e.category, e.text) for e in entries)
    return content_hash(rows)


def document_from_entries(
    entries: Sequence[CatalogEntry],
    *,
    name: str,
    note: str = "",
    labels: dict[str, str] | None = None,
) -> CatalogDocument:
    """Group flat entries back into a document (keys are kept exactly).

    Args:
        entries: Entries whose keys follow ``class/category/n``.
        name: The catalog name.
        note: Free text stored with the catalog.
        labels: Optional display labels per category.

    Raises:
        ValueError: A key does not match its class and category.
    """
    groups: dict[tuple[str, str], list[Stimulus]] = {}
    for entry in entries:
        match = _KEY_RE.match(entry.key)
        if not match or (match["cls"], match["cat"]) != (entry.condition_class, entry.category):
            raise ValueError(
                f"key {entry.key!r} must be {entry.condition_class}/{entry.category}/<n>"
            )
        stims = groups.setdefault((entry.condition_class, entry.category), [])
        n = int(match["n"])
        # Plain positional stimuli round-trip as plain strings in YAML.
        stims.append(Stimulus(n=None if n == len(stims) + 1 else n, text=entry.text))
    categories = []
    for (cls, cat), stims in groups.items():
        if any(s.n is not None for s in stims):
            stims = [
                Stimulus(n=s.n if s.n is not None else i, text=s.text)
                for i, s in enumerate(stims, start=1)
            ]
        categories.append(
            CatalogCategory.model_validate(
                {
                    "condition_class": cls,
                    "category": cat,
                    "label": (labels or {}).get(cat, ""),
                    "stimuli": stims,
                }
            )
        )
    return CatalogDocument(name=name, note=note, categories=tuple(categories))


# ------------------------------------------------------------------------- reading


@functools.cache
def load_default_catalog() -> CatalogDocument:
    """Load the catalog shipped with the package (``study/catalog/default.yaml``).

    Parsed once per process (the document is frozen): resolving the default catalog, as
    every ``generate`` and its resume does, read and parsed the whole YAML (0.4 s) just
    to learn its name.
    """
    text = resources.files("study.catalog").joinpath(DEFAULT_CATALOG_FILE).read_text("utf-8")
    return parse_catalog_yaml(text, source=DEFAULT_CATALOG_FILE)


def read_catalog_file(path: Path, *, name: str | None = None) -> CatalogDocument:
    """Read a catalog from ``.yaml``/``.yml`` or ``.csv``.

    Args:
        path: The file.
        name: Catalog name for CSV files (default: the file stem); YAML files name themselves.

    Raises:
        InputError: The file is not a valid catalog; the message names file and line.
    """
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".csv"):
        raise InputError(f"{path}: catalog files must be .yaml, .yml or .csv.")
    text = read_text_file(path, what="catalog file")
    if suffix == ".csv":
        return parse_catalog_csv(text, source=str(path), name=name or path.stem)
    return parse_catalog_yaml(text, source=str(path))


def parse_catalog_yaml(text: str, *, source: str) -> CatalogDocument:
    """Parse and validate a YAML catalog document.

    Raises:
        InputError: YAML syntax or schema problems, with the line of the offending node.
    """
    data, root = load_yaml_mapping(
        text, source=source, expected="a catalog is a mapping with name and categories"
    )
    nul = _nul_node_line(root)
    if nul is not None:
        raise InputError(f"{source} line {nul}: contains a NUL character (\\x00).")
    try:
        return CatalogDocument.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, root, source=source) from exc


def _nul_node_line(node: Any) -> int | None:
    """Line of the first scalar holding a NUL (a ``"\\0"`` escape): PostgreSQL refuses it."""
    if isinstance(node, yaml.ScalarNode):
        return node.start_mark.line + 1 if "\x00" in str(node.value) else None
    children: list[Any] = []
    if isinstance(node, yaml.MappingNode):
        children = [part for pair in node.value for part in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    for child in children:
        found = _nul_node_line(child)
        if found is not None:
            return found
    return None


def parse_catalog_csv(text: str, *, source: str, name: str) -> CatalogDocument:
    """Parse a flat CSV catalog (columns ``key,condition_class,category,text``).

    ``key`` may be empty: it is then the next free number in the category.

    Raises:
        InputError: Missing columns or bad rows; the message names file and line.
    """
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in CSV_COLUMNS[1:] if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{source} line 1: missing column(s) {', '.join(missing)}.")
    entries: list[CatalogEntry] = []
    used: dict[tuple[str, str], set[int]] = {}
    seen_keys: dict[str, int] = {}
    for raw in reader:
        line = reader.line_num
        # Cells this workbench exported carry a formula guard; read them back as written.
        row = {k: unguard_cell(v) for k, v in raw.items()}
        cls = (row.get("condition_class") or "").strip()
        cat = (row.get("category") or "").strip()
        body = row.get("text")
        key = (row.get("key") or "").strip()
        if cls not in CONDITION_CLASSES:
            raise InputError(
                f"{source} line {line}: condition_class must be one of "
                f"{', '.join(CONDITION_CLASSES)}, got {cls!r}."
            )
        if not _CATEGORY_RE.match(cat):
            raise InputError(f"{source} line {line}: invalid category {cat!r}.")
        if body is None or body == "":
            raise InputError(f"{source} line {line}: empty text.")
        if any("\x00" in (v or "") for v in row.values() if isinstance(v, str)):
            raise InputError(f"{source} line {line}: contains a NUL character (\\x00).")
        numbers = used.setdefault((cls, cat), set())
        if key:
            match = _KEY_RE.match(key)
            if not match or (match["cls"], match["cat"]) != (cls, cat):
                raise InputError(f"{source} line {line}: key {key!r} must be {cls}/{cat}/<n>.")
            n = int(match["n"])
        else:
            n = max(numbers, default=0) + 1
            key = f"{cls}/{cat}/{n}"
        if key in seen_keys:
            raise InputError(
                f"{source} line {line}: duplicate key {key!r} (first on line {seen_keys[key]})."
            )
        seen_keys[key] = line
        numbers.add(n)
        entries.append(CatalogEntry(key, cls, cat, body))
    if not entries:
        raise InputError(f"{source}: no perturbations in the file.")
    return document_from_entries(entries, name=name)


# ------------------------------------------------------------------------- writing


class _Dumper(yaml.SafeDumper):
    """Keeps whitespace-only stimuli double-quoted so they survive a round trip."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if (not value.strip() or value != value.strip()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def catalog_to_yaml(doc: CatalogDocument) -> str:
    """Serialise a document to YAML (plain strings where keys are positional)."""
    data: dict[str, Any] = {"version": doc.version, "name": doc.name, "note": doc.note}
    cats = []
    for cat in doc.categories:
        stims: list[Any] = [
            s.text if s.n is None else {"n": s.n, "text": s.text} for s in cat.stimuli
        ]
        item: dict[str, Any] = {"condition_class": cat.condition_class, "category": cat.category}
        if cat.label:
            item["label"] = cat.label
        item["stimuli"] = stims
        cats.append(item)
    data["categories"] = cats
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def catalog_to_csv(doc: CatalogDocument) -> str:
    """Serialise a document to a flat CSV with :data:`CSV_COLUMNS`."""
    rows = ((e.key, e.condition_class, e.category, e.text) for e in doc.entries())
    return csv_text(CSV_COLUMNS, rows)
