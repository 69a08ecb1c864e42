"""Versioned catalogs in the database (``PerturbationCatalog`` + ``Perturbation`` rows).

Importing content identical to the latest version of the same name reuses that version;
changed content becomes the next version. Stored versions are never modified.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session, col, select

from storage.errors import InputError, NotFoundError
from storage.models import Perturbation, PerturbationCatalog
from storage.repo.perturbations import create_catalog, latest_catalog
from study.catalog.document import (
    CatalogDocument,
    CatalogEntry,
    document_from_entries,
    load_default_catalog,
)


@dataclass(frozen=True)
class CatalogImport:
    """The outcome of importing a catalog document."""

    catalog_id: int
    name: str
    version: int
    content_hash: str
    created: bool
    perturbations: int


def import_catalog(doc: CatalogDocument, *, session: Session) -> CatalogImport:
    """Store ``doc`` as the next version of its catalog, unless nothing changed.

    Content identical to the latest version of the same name reuses that version (so
    importing twice, or seeding the default catalog on every command, is a no-op);
    changed content becomes a new version. Stored versions are never modified.

    Args:
        doc: The validated catalog document.
        session: Open session; the caller commits.

    Returns:
        The catalog version that holds exactly this content.
    """
    entries = doc.entries()
    before = latest_catalog(doc.name, session=session)
    rows = [
        Perturbation(
            catalog_id=0,  # set by create_catalog
            key=e.key,
            condition_class=e.condition_class,
            category=e.category,
            text=e.text,
        )
        for e in entries
    ]
    catalog = create_catalog(doc.name, rows, note=doc.note or None, session=session)
    assert catalog.id is not None
    created = before is None or before.id != catalog.id
    return CatalogImport(
        catalog.id, catalog.name, catalog.version, catalog.content_hash or "", created, len(rows)
    )


def ensure_default_catalog(*, session: Session) -> PerturbationCatalog:
    """Make sure the bundled catalog is stored and return its catalog row."""
    result = import_catalog(load_default_catalog(), session=session)
    catalog = session.get(PerturbationCatalog, result.catalog_id)
    assert catalog is not None
    return catalog


def resolve_catalog(ref: str | None, *, session: Session) -> PerturbationCatalog:
    """Find a catalog by ``NAME`` (latest version) or ``NAME@VERSION``.

    ``None`` means the latest version of the bundled catalog's name, which is seeded
    from the package on first use (an edited, re-imported version stays the latest).

    Raises:
        NotFoundError: No such catalog or version.
        InputError: The version is not a number.
    """
    if ref is None:
        name = load_default_catalog().name
        return latest_catalog(name, session=session) or ensure_default_catalog(session=session)
    name, _, version_text = ref.partition("@")
    query = select(PerturbationCatalog).where(PerturbationCatalog.name == name)
    if version_text:
        if not version_text.isdigit():
            raise InputError(f"Catalog version in {ref!r} must be a number (e.g. {name}@2).")
        query = query.where(PerturbationCatalog.version == int(version_text))
    found = session.exec(query.order_by(col(PerturbationCatalog.version).desc())).first()
    if found is None:
        raise NotFoundError(f"No perturbation catalog {ref!r} in this workspace.")
    return found


def catalog_perturbations(catalog_id: int, *, session: Session) -> list[Perturbation]:
    """The perturbations of one catalog version, in import order."""
    return list(
        session.exec(
            select(Perturbation)
            .where(Perturbation.catalog_id == catalog_id)
            .order_by(col(Perturbation.id))
        ).all()
    )


def catalog_document(catalog: PerturbationCatalog, *, session: Session) -> CatalogDocument:
    """Rebuild the document of a stored catalog version (labels from the bundled catalog)."""
    assert catalog.id is not None
    rows = catalog_perturbations(catalog.id, session=session)
    labels = {c.category: c.label for c in load_default_catalog().categories if c.label}
    entries = [CatalogEntry(p.key, p.condition_class, p.category, p.text) for p in rows]
    return document_from_entries(entries, name=catalog.name, note=catalog.note or "", labels=labels)


def list_catalogs(*, session: Session) -> list[PerturbationCatalog]:
    """Every stored catalog version, by name then version."""
    return list(
        session.exec(
            select(PerturbationCatalog).order_by(
                col(PerturbationCatalog.name), col(PerturbationCatalog.version)
            )
        ).all()
    )
