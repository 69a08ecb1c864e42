"""Immutable ontology versions in the workspace database.

A version is never changed in place: new content means a new row (``version`` + 1, with
``parent_id`` pointing at the version it came from). Storing the same content again under
the same name returns the existing row, so seeding is idempotent.
"""

from __future__ import annotations

from sqlmodel import Session, select

from ontology.lineage import main_head
from ontology.schema import OntologyDoc, load_seed, parse_ontology
from storage.errors import InputError, NotFoundError
from storage.models import OntologyVersion
from storage.repo.ontology import LeafItem, create_version, latest_version


def ensure_version(
    doc: OntologyDoc,
    *,
    session: Session,
    author: str | None = None,
    note: str | None = None,
    parent_id: int | None = None,
) -> OntologyVersion:
    """Return the stored version with this content, creating the next version if new.

    A new version's parent is ``parent_id``, or else the newest version of the name's main
    line (:mod:`ontology.lineage`: an import continues the main line, never a branch).
    """
    if parent_id is None and latest_version(doc.name, session=session) is not None:
        head = main_head(list_versions(doc.name, session=session))
        parent_id = head.id if head is not None else None
    leaves = [
        LeafItem(
            root=root.name,
            leaf=leaf.name,
            symbol=doc.symbol_of[leaf.name],
            definition=leaf.definition,
            triggers=list(leaf.triggers),
            exclusions=list(leaf.exclusions),
            examples=list(leaf.examples),
        )
        for root in doc.roots
        for leaf in root.leaves
    ]
    return create_version(
        doc.name,
        doc.model_dump(mode="json"),
        leaves=leaves,
        parent_id=parent_id,
        author=author,
        note=note,
        reuse_identical=True,
        digest=doc.content_hash(),
        session=session,
    )


def seed_ontologies(*, session: Session) -> list[OntologyVersion]:
    """Store the bundled ontologies (idempotent); the operational one first."""
    return [
        ensure_version(load_seed("driftlens"), session=session, author="driftlens", note="seed"),
        ensure_version(load_seed("original"), session=session, author="driftlens", note="seed"),
    ]


def get_version(ref: str | int | None, *, session: Session) -> OntologyVersion:
    """Find a version by id, ``name`` (the newest of its main line), ``name@N``, or ``None``
    (the newest of ``driftlens``'s main line).

    A bare name never means a branch (:mod:`ontology.lineage`): an edit saved from an old
    version on purpose is used only where it is named.
    """
    query = select(OntologyVersion)
    row: OntologyVersion | None
    if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
        row = session.get(OntologyVersion, int(ref))
    else:
        name, _, number = (ref or "driftlens").partition("@")
        query = query.where(OntologyVersion.name == name)
        if number:
            query = query.where(OntologyVersion.version == int(number))
            row = session.exec(query).first()
        else:
            row = main_head(session.exec(query).all())
        if row is None and ref is None:
            # The default is the bundled operational ontology: a fresh workspace gets it
            # on first use instead of an error.
            row = seed_ontologies(session=session)[0]
    if row is None:
        raise NotFoundError(f"no ontology version {ref!r} in this workspace")
    return row


def document(version: OntologyVersion) -> OntologyDoc:
    """The ontology document stored in a version row."""
    return OntologyDoc.model_validate(version.content)


def version_label(version: OntologyVersion) -> str:
    """``name@N`` of a version."""
    return f"{version.name}@{version.version}"


def list_versions(name: str | None = None, *, session: Session) -> list[OntologyVersion]:
    """Stored versions, by name then version number."""
    from storage.repo.ontology import list_versions as _list

    return _list(name, session=session)


def new_version(
    base: OntologyVersion,
    doc: OntologyDoc,
    *,
    session: Session,
    author: str | None = None,
    note: str | None = None,
) -> OntologyVersion:
    """Store ``doc`` as a new version derived from ``base`` (never edits ``base``).

    Identical content returns the existing version with that content.

    Raises:
        InputError: ``doc`` names a different ontology than ``base``.
    """
    if doc.name != base.name:
        raise InputError(
            f"the edited document is named {doc.name!r}; a new version of {base.name!r} "
            "must keep its name (import it as a new ontology instead)"
        )
    return ensure_version(doc, session=session, author=author, note=note, parent_id=base.id)


def import_version(
    text: str,
    *,
    session: Session,
    source: str = "<text>",
    author: str | None = None,
    note: str | None = None,
) -> OntologyVersion:
    """Parse a YAML document and store it (next version of its name, or version 1)."""
    doc = parse_ontology(text, source=source)
    return ensure_version(doc, session=session, author=author, note=note)


def replace_definitions(doc: OntologyDoc, blocks: dict[str, str]) -> OntologyDoc:
    """A copy of ``doc`` with leaf definitions replaced (``{leaf: definition block}``).

    A block may end with ``Triggers:``/``Exclusions:`` lines
    (:func:`ontology.parsing.split_definition`); when present they replace the leaf's lists.

    Raises:
        InputError: a leaf is unknown or a definition is empty.
    """
    from ontology.parsing import split_definition

    data = doc.model_dump(mode="json")
    seen = set()
    for root in data["roots"]:
        for leaf in root["leaves"]:
            if leaf["name"] not in blocks:
                continue
            prose, triggers, exclusions = split_definition(blocks[leaf["name"]])
            if not prose:
                raise InputError(f"the new definition of {leaf['name']!r} is empty")
            leaf["definition"] = prose
            if triggers is not None:
                leaf["triggers"] = list(triggers)
            if exclusions is not None:
                leaf["exclusions"] = list(exclusions)
            seen.add(leaf["name"])
    missing = set(blocks) - seen
    if missing:
        raise InputError(f"no leaf named {sorted(missing)} in ontology {doc.name!r}")
    return OntologyDoc.model_validate(data)


def clean_terms(terms: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Trigger or exclusion terms as stored: stripped, empty ones dropped, first spelling kept.

    Duplicates are found case-insensitively (``Mortgage`` and ``mortgage`` are one term for
    the keyword labeler, which matches without case).
    """
    seen: set[str] = set()
    kept: list[str] = []
    for term in terms:
        text = " ".join(str(term).split())
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            kept.append(text)
    return tuple(kept)


def with_leaf_fields(
    doc: OntologyDoc,
    leaf: str,
    *,
    definition: str,
    triggers: list[str] | tuple[str, ...],
    exclusions: list[str] | tuple[str, ...],
) -> OntologyDoc:
    """A copy of ``doc`` whose leaf ``leaf`` has these definition, triggers and exclusions.

    Raises:
        InputError: the leaf is unknown or the definition is empty.
    """
    prose = definition.strip()
    if not prose:
        raise InputError(f"the definition of {leaf!r} is empty; write one before saving")
    data = doc.model_dump(mode="json")
    for root in data["roots"]:
        for item in root["leaves"]:
            if item["name"] == leaf:
                item["definition"] = prose
                item["triggers"] = list(clean_terms(triggers))
                item["exclusions"] = list(clean_terms(exclusions))
                return OntologyDoc.model_validate(data)
    raise InputError(f"no leaf named {leaf!r} in ontology {doc.name!r}")


def edit_leaf(
    base: OntologyVersion,
    leaf: str,
    *,
    definition: str,
    triggers: list[str] | tuple[str, ...],
    exclusions: list[str] | tuple[str, ...],
    session: Session,
    author: str | None = None,
    note: str | None = None,
) -> OntologyVersion:
    """Store ``base`` with one leaf's fields edited as a new version (parent ``base``).

    Unchanged fields return ``base`` itself (no empty version is made).

    Raises:
        InputError: the leaf is unknown or the definition is empty.
    """
    edited = with_leaf_fields(
        document(base), leaf, definition=definition, triggers=triggers, exclusions=exclusions
    )
    return new_version(
        base,
        edited,
        session=session,
        author=(author or "").strip() or None,
        note=(note or "").strip() or None,
    )
