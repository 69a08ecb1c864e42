"""Immutable ontology versions and their leaves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlmodel import Session, col, select

from storage.errors import InputError
from storage.hashing import content_hash
from storage.models import OntologyLeaf, OntologyVersion
from storage.repo.lookup import require_row


class LeafLike(Protocol):
    """Anything with a leaf's content: a :class:`LeafItem`, a stored
    :class:`~storage.models.OntologyLeaf`, or another room's model with these attributes."""

    @property
    def root(self) -> str: ...
    @property
    def leaf(self) -> str: ...
    @property
    def symbol(self) -> int: ...
    @property
    def definition(self) -> str: ...
    @property
    def triggers(self) -> Sequence[str]: ...
    @property
    def exclusions(self) -> Sequence[str]: ...
    @property
    def examples(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class LeafItem:
    """One leaf symbol to store with a version (``symbol`` is 1..M)."""

    root: str
    leaf: str
    symbol: int
    definition: str = ""
    triggers: Sequence[str] = field(default_factory=tuple)
    exclusions: Sequence[str] = field(default_factory=tuple)
    examples: Sequence[str] = field(default_factory=tuple)


def create_version(
    name: str,
    content: Mapping[str, Any],
    *,
    leaves: Sequence[LeafLike],
    parent_id: int | None = None,
    author: str | None = None,
    note: str | None = None,
    reuse_identical: bool = False,
    digest: str | None = None,
    session: Session,
) -> OntologyVersion:
    """Store ``content`` as the next version of ontology ``name``.

    Args:
        name: ontology name (e.g. ``"driftlens"``).
        content: the full ontology document (hashed into ``content_hash``).
        leaves: the leaves (:class:`LeafItem` or alike); leaf names and symbols must be
            unique.
        parent_id: the version this one was derived from.
        author: who made it (a person or ``"seed"``).
        note: why (e.g. the accepted rewrite).
        reuse_identical: return the stored version of ``name`` with identical content
            (the same ``content_hash``) instead (so seeding twice is a no-op).
        digest: the ``content_hash`` to store and compare (default:
            :func:`storage.hashing.content_hash` of ``content``), for a caller with its
            own canonical hash.
        session: the open session.

    Raises:
        InputError: duplicate leaf names or symbols.
    """
    names = [leaf.leaf for leaf in leaves]
    symbols = [leaf.symbol for leaf in leaves]
    if len(set(names)) != len(names) or len(set(symbols)) != len(symbols):
        raise InputError(f"Ontology {name!r} has duplicate leaf names or symbols.")
    if digest is None:
        digest = content_hash(dict(content))
    if reuse_identical:
        same = session.exec(
            select(OntologyVersion).where(
                OntologyVersion.name == name, OntologyVersion.content_hash == digest
            )
        ).first()
        if same is not None:
            return same
    latest = latest_version(name, session=session)
    version = OntologyVersion(
        name=name,
        version=(latest.version + 1) if latest is not None else 1,
        parent_id=parent_id,
        author=author,
        note=note,
        content=dict(content),
        content_hash=digest,
    )
    session.add(version)
    session.flush()
    assert version.id is not None
    for leaf in leaves:
        session.add(
            OntologyLeaf(
                version_id=version.id,
                root=leaf.root,
                leaf=leaf.leaf,
                symbol=leaf.symbol,
                definition=leaf.definition,
                triggers=list(leaf.triggers or []),
                exclusions=list(leaf.exclusions or []),
                examples=list(leaf.examples or []),
            )
        )
    session.flush()
    return version


def latest_version(name: str | None = None, *, session: Session) -> OntologyVersion | None:
    """The newest version of ontology ``name`` (of any ontology when ``None``)."""
    stmt = select(OntologyVersion)
    if name is not None:
        stmt = stmt.where(OntologyVersion.name == name).order_by(
            col(OntologyVersion.version).desc()
        )
    else:
        stmt = stmt.order_by(col(OntologyVersion.id).desc())
    return session.exec(stmt.limit(1)).first()


def get_version(name: str, version: int, *, session: Session) -> OntologyVersion | None:
    """Ontology ``name`` at ``version``."""
    stmt = select(OntologyVersion).where(
        OntologyVersion.name == name, OntologyVersion.version == version
    )
    return session.exec(stmt).first()


def require_version(version_id: int, *, session: Session) -> OntologyVersion:
    """The ontology version with this id.

    Raises:
        NotFoundError: no such version.
    """
    return require_row(session, OntologyVersion, version_id, what="Ontology version")


def list_versions(name: str | None = None, *, session: Session) -> list[OntologyVersion]:
    """Versions by name then version number."""
    stmt = select(OntologyVersion)
    if name is not None:
        stmt = stmt.where(OntologyVersion.name == name)
    stmt = stmt.order_by(col(OntologyVersion.name), col(OntologyVersion.version))
    return list(session.exec(stmt))


def version_leaves(version_id: int, *, session: Session) -> list[OntologyLeaf]:
    """A version's leaves in symbol order (1..M)."""
    stmt = (
        select(OntologyLeaf)
        .where(OntologyLeaf.version_id == version_id)
        .order_by(col(OntologyLeaf.symbol))
    )
    return list(session.exec(stmt))
