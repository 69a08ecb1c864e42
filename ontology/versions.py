"""Immutable ontology versions in the workspace database.

A version is never changed in place: new content means a new row (``version`` + 1, with
``parent_id`` pointing at the version it came from). Storing the same content again under
the same name returns the existing row, so seeding is idempotent.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from ontology.schema import OntologyDoc, load_seed
from storage.errors import NotFoundError
from storage.models import OntologyLeaf, OntologyVersion


def ensure_version(
    doc: OntologyDoc,
    *,
    session: Session,
    author: str | None = None,
    note: str | None = None,
    parent_id: int | None = None,
) -> OntologyVersion:
    """Return the stored version with this content, creating the next version if new."""
    digest = doc.content_hash()
    existing = session.exec(
        select(OntologyVersion).where(
            OntologyVersion.name == doc.name, OntologyVersion.content_hash == digest
        )
    ).first()
    if existing is not None:
        return existing
    latest = session.exec(
        select(OntologyVersion)
        .where(OntologyVersion.name == doc.name)
        .order_by(col(OntologyVersion.version).desc())
    ).first()
    row = OntologyVersion(
        name=doc.name,
        version=(latest.version + 1) if latest else 1,
        parent_id=parent_id if parent_id is not None else (latest.id if latest else None),
        author=author,
        note=note,
        content=doc.model_dump(mode="json"),
        content_hash=digest,
    )
    session.add(row)
    session.flush()
    assert row.id is not None
    for root in doc.roots:
        for leaf in root.leaves:
            session.add(
                OntologyLeaf(
                    version_id=row.id,
                    root=root.name,
                    leaf=leaf.name,
                    symbol=doc.symbol_of[leaf.name],
                    definition=leaf.definition,
                    triggers=list(leaf.triggers),
                    exclusions=list(leaf.exclusions),
                    examples=list(leaf.examples),
                )
            )
    session.flush()
    return row


def seed_ontologies(*, session: Session) -> list[OntologyVersion]:
    """Store the bundled ontologies (idempotent); the operational one first."""
    return [
        ensure_version(load_seed("driftlens"), session=session, author="driftlens", note="seed"),
        ensure_version(load_seed("original"), session=session, author="driftlens", note="seed"),
    ]


def get_version(ref: str | int | None, *, session: Session) -> OntologyVersion:
    """Find a version by id, ``name`` (latest), ``name@N``, or ``None`` (latest ``driftlens``)."""
    query = select(OntologyVersion)
    if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
        row = session.get(OntologyVersion, int(ref))
    else:
        name, _, number = (ref or "driftlens").partition("@")
        query = query.where(OntologyVersion.name == name)
        if number:
            query = query.where(OntologyVersion.version == int(number))
        row = session.exec(query.order_by(col(OntologyVersion.version).desc())).first()
    if row is None:
        raise NotFoundError(f"no ontology version {ref!r} in this workspace")
    return row


def document(version: OntologyVersion) -> OntologyDoc:
    """The ontology document stored in a version row."""
    return OntologyDoc.model_validate(version.content)
