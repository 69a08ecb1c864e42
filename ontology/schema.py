"""The ontology document: roots, leaves (the symbols) and their operational definitions.

A document is immutable data; versions of it live in storage. Symbols are numbered
1..M in document order (roots in order, leaves in order), so a trajectory is a sequence
of small positive integers that the compiled core can consume; ``unmapped`` is 0.
"""

from __future__ import annotations

import functools
import hashlib
import json
from functools import cached_property
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from storage.errors import InputError
from storage.yaml_input import parse_yaml_model, read_text_file

UNMAPPED = "unmapped"
UNMAPPED_SYMBOL = 0
SEEDS: tuple[str, ...] = ("driftlens", "original")


class LeafDef(BaseModel):
    """A leaf value (one symbol) with its operational definition."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    definition: str = Field(min_length=1)
    triggers: tuple[str, ...] = ()
    exclusions: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


class RootDef(BaseModel):
    """A root category grouping leaves."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    definition: str = Field(min_length=1)
    triggers: tuple[str, ...] = ()
    exclusions: tuple[str, ...] = ()
    leaves: tuple[LeafDef, ...] = Field(min_length=1)


class OntologyDoc(BaseModel):
    """A whole ontology. ``version`` is the document format version, not the ontology version."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    name: str = Field(min_length=1)
    description: str = ""
    roots: tuple[RootDef, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> OntologyDoc:
        leaves = [leaf.name for root in self.roots for leaf in root.leaves]
        dupes = sorted({n for n in leaves if leaves.count(n) > 1})
        if dupes:
            raise ValueError(f"leaf names must be unique; repeated: {', '.join(dupes)}")
        if UNMAPPED in {n.lower() for n in leaves}:
            raise ValueError(f"'{UNMAPPED}' is reserved and cannot name a leaf")
        return self

    @cached_property
    def leaf_names(self) -> tuple[str, ...]:
        """Leaf names in symbol order (symbol = index + 1)."""
        return tuple(leaf.name for root in self.roots for leaf in root.leaves)

    @cached_property
    def symbol_of(self) -> dict[str, int]:
        """Leaf name -> symbol (1..M); ``unmapped`` -> 0."""
        table = {name: i + 1 for i, name in enumerate(self.leaf_names)}
        table[UNMAPPED] = UNMAPPED_SYMBOL
        return table

    @cached_property
    def root_of(self) -> dict[str, str]:
        """Leaf name -> root name; ``unmapped`` -> ``unmapped``."""
        table = {leaf.name: root.name for root in self.roots for leaf in root.leaves}
        table[UNMAPPED] = UNMAPPED
        return table

    def leaf(self, name: str) -> LeafDef:
        """Return the leaf called ``name``."""
        for root in self.roots:
            for leaf in root.leaves:
                if leaf.name == name:
                    return leaf
        raise KeyError(name)

    def content_hash(self) -> str:
        """SHA-256 of the canonical JSON form: equal content, equal hash."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def parse_ontology(text: str, *, source: str = "<text>") -> OntologyDoc:
    """Parse an ontology document from YAML text.

    Raises:
        InputError: the YAML is malformed or does not describe a valid ontology.
    """
    return parse_yaml_model(
        OntologyDoc,
        text,
        source=source,
        expected="an ontology is a mapping with 'name' and 'roots'",
        what="ontology",
    )


def load_ontology_file(path: Path) -> OntologyDoc:
    """Read an ontology YAML file (see :func:`parse_ontology`)."""
    return parse_ontology(read_text_file(path, what="ontology file"), source=str(path))


def load_seed(name: str = "driftlens") -> OntologyDoc:
    """Load a bundled ontology: ``driftlens`` (operational) or ``original`` (abstract)."""
    if name not in SEEDS:
        raise InputError(f"no bundled ontology named {name!r}; choose one of {', '.join(SEEDS)}")
    # A copy of the document parsed once per process: the app seeds the ontologies on every
    # page visit, and parsing the YAML was most of that; the copy keeps a caller's edit from
    # reaching the next caller.
    return _parsed_seed(name).model_copy(deep=True)


@functools.cache
def _parsed_seed(name: str) -> OntologyDoc:
    text = resources.files("ontology.data").joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    return parse_ontology(text, source=f"bundled ontology {name}")


def dump_ontology(doc: OntologyDoc) -> str:
    """Serialise a document to YAML (round-trips through :func:`parse_ontology`)."""
    data = doc.model_dump(mode="json")
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
