"""Perturbation catalogs: immutable, versioned sets of memory lines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import func
from sqlmodel import Session, col, select

from storage.errors import InputError
from storage.hashing import content_hash
from storage.models import Perturbation, PerturbationCatalog


class PerturbationLike(Protocol):
    """Anything with a perturbation's content: a :class:`PerturbationItem`, a stored
    :class:`~storage.models.Perturbation`, or another room's model with these attributes."""

    @property
    def key(self) -> str: ...
    @property
    def condition_class(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def text(self) -> str: ...


@dataclass(frozen=True)
class PerturbationItem:
    """One memory line to store in a catalog (``key`` is stable, e.g. ``"attribute/age/3"``)."""

    key: str
    condition_class: str
    category: str
    text: str


def catalog_hash(perturbations: Sequence[PerturbationLike]) -> str:
    """Content hash of a catalog's items (order-independent, keyed on ``key``)."""
    items = sorted((p.key, p.condition_class, p.category, p.text) for p in perturbations)
    return content_hash(items)


def create_catalog(
    name: str,
    perturbations: Sequence[PerturbationLike],
    *,
    note: str | None = None,
    reuse_identical: bool = True,
    session: Session,
) -> PerturbationCatalog:
    """Store ``perturbations`` as the next version of catalog ``name``.

    Args:
        name: catalog name.
        perturbations: the items (:class:`PerturbationItem` or alike); keys must be unique.
        note: free text shown next to the version.
        reuse_identical: when the latest version has the same content, return it instead of
            creating a new version (so seeding twice is a no-op).
        session: the open session.

    Raises:
        InputError: duplicate keys.
    """
    keys = [p.key for p in perturbations]
    if len(set(keys)) != len(keys):
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        raise InputError(f"Catalog {name!r} has duplicate perturbation keys: {dupes[:5]}.")
    digest = catalog_hash(perturbations)
    latest = latest_catalog(name, session=session)
    if reuse_identical and latest is not None and latest.content_hash == digest:
        return latest
    catalog = PerturbationCatalog(
        name=name,
        version=(latest.version + 1) if latest is not None else 1,
        note=note,
        content_hash=digest,
    )
    session.add(catalog)
    session.flush()
    assert catalog.id is not None
    for p in perturbations:
        session.add(
            Perturbation(
                catalog_id=catalog.id,
                key=p.key,
                condition_class=p.condition_class,
                category=p.category,
                text=p.text,
            )
        )
    session.flush()
    return catalog


def latest_catalog(name: str, *, session: Session) -> PerturbationCatalog | None:
    """The highest version of catalog ``name``."""
    stmt = (
        select(PerturbationCatalog)
        .where(PerturbationCatalog.name == name)
        .order_by(col(PerturbationCatalog.version).desc())
        .limit(1)
    )
    return session.exec(stmt).first()


def get_catalog(
    name: str, version: int | None = None, *, session: Session
) -> PerturbationCatalog | None:
    """Catalog ``name`` at ``version`` (latest when ``None``)."""
    if version is None:
        return latest_catalog(name, session=session)
    stmt = select(PerturbationCatalog).where(
        PerturbationCatalog.name == name, PerturbationCatalog.version == version
    )
    return session.exec(stmt).first()


def list_catalogs(*, session: Session) -> list[PerturbationCatalog]:
    """Every catalog version, by name then version."""
    stmt = select(PerturbationCatalog).order_by(
        col(PerturbationCatalog.name), col(PerturbationCatalog.version)
    )
    return list(session.exec(stmt))


def list_perturbations(
    catalog_id: int,
    *,
    session: Session,
    condition_class: str | Sequence[str] | None = None,
    category: str | None = None,
) -> list[Perturbation]:
    """A catalog's perturbations in insertion order, optionally filtered."""
    stmt = select(Perturbation).where(Perturbation.catalog_id == catalog_id)
    if condition_class is not None:
        classes = [condition_class] if isinstance(condition_class, str) else list(condition_class)
        stmt = stmt.where(col(Perturbation.condition_class).in_(classes))
    if category is not None:
        stmt = stmt.where(Perturbation.category == category)
    return list(session.exec(stmt.order_by(col(Perturbation.id))))


def count_perturbations(catalog_id: int, *, session: Session) -> int:
    """Number of perturbations in a catalog."""
    stmt = (
        select(func.count()).select_from(Perturbation).where(Perturbation.catalog_id == catalog_id)
    )
    return int(session.exec(stmt).one())
