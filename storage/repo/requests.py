"""Stored requests, normalised: prompts and shared parameters once, each request's own rest.

A stored request (``Response.request`` as written by generation, the payload of an
``LLMCacheEntry``) is split in three:

* ``messages`` → one :class:`~storage.models.Prompt` row per distinct message list, whose
  leading system messages (the instruction, the same in every prompt of a study) are a
  prompt row of their own that it points at (``prefix_id``), stored once;
* the fields many requests share (model, prompt version, sampling without its seed,
  sample index, served model…) → one :class:`~storage.models.RequestParams` row;
* what is this request's own (the sampling seed, parse notes, any field not in
  :data:`SHARED_KEYS`) stays in the row's ``request`` column: a few dozen bytes instead
  of a kilobyte and a half for a generation request.

:func:`join_request` is the exact inverse of :func:`split_request` (equal as a dict, and
as canonical JSON), so exports, judges and preference pairs read the same request as
before; :func:`stored_request` and :func:`cache_request` do it for a row.

Ids are assigned in bulk (``INSERT … ON CONFLICT DO NOTHING`` then one ``SELECT`` per
batch) by a :class:`RequestInterner`, which remembers the ids it has seen, so a run of
200,000 requests over 99 prompts per question looks up each prompt once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select

from storage.hashing import content_hash
from storage.models import LLMCacheEntry, Prompt, RequestParams, Response

#: Top-level fields shared by many requests (moved to ``request_params``); everything
#: else but ``messages`` stays in the row. Generation and cache payloads use these.
SHARED_KEYS: tuple[str, ...] = (
    "cache_format",
    "provider",
    "endpoint",
    "model",
    "prompt_version",
    "sampling",
    "sample_index",
    "served_model",
    "extras",
)
#: Rows per ``IN (…)`` lookup: below SQLite's bound-parameter limit.
_CHUNK = 500


@dataclass(frozen=True)
class SplitRequest:
    """A request in its three stored parts.

    Attributes:
        messages: the message list (``None``: the request had no ``messages`` list).
        body: the shared fields (``None``: nothing left to share).
        rest: this request's own fields.
    """

    messages: list[Any] | None
    body: dict[str, Any] | None
    rest: dict[str, Any]


def split_request(record: Mapping[str, Any]) -> SplitRequest:
    """Split a stored request (see the module docstring); :func:`join_request` inverts it.

    Only the fields named in :data:`SHARED_KEYS` move to the shared body; any other field
    (an instrument's own ``context``, parse notes…) stays in the row, where code that reads
    ``row.request`` for it still finds it.
    """
    rest = dict(record)
    messages = rest.get("messages")
    if isinstance(messages, list):
        del rest["messages"]
    else:
        messages = None
    body = {key: rest.pop(key) for key in SHARED_KEYS if key in rest}
    sampling = body.get("sampling")
    if isinstance(sampling, dict) and "seed" in sampling:
        body["sampling"] = {k: v for k, v in sampling.items() if k != "seed"}
        rest["sampling"] = {"seed": sampling["seed"]}
    return SplitRequest(messages=messages, body=body or None, rest=rest)


def join_request(
    messages: list[Any] | None, body: Mapping[str, Any] | None, rest: Mapping[str, Any]
) -> dict[str, Any]:
    """Put a split request back together (the inverse of :func:`split_request`)."""
    out: dict[str, Any] = dict(body or {})
    if messages is not None:
        out["messages"] = messages
    for key, value in rest.items():
        if key == "sampling" and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def split_prefix(messages: Sequence[Any]) -> tuple[list[Any] | None, list[Any]]:
    """``(leading system messages, the rest)``; ``None`` when there is nothing to share.

    Only a prompt that has both system messages and something after them is split: a
    prompt of system messages alone is the prefix row itself.
    """
    n = 0
    while (
        n < len(messages) and isinstance(messages[n], dict) and messages[n].get("role") == "system"
    ):
        n += 1
    if n == 0 or n == len(messages):
        return None, list(messages)
    return list(messages[:n]), list(messages[n:])


def prompt_hash(messages: list[Any]) -> str:
    """The key of a message list in the ``prompt`` table."""
    return content_hash(messages)


def params_hash(body: Mapping[str, Any]) -> str:
    """The key of a shared-parameter body in the ``request_params`` table."""
    return content_hash(dict(body))


def _insert(session: Session) -> Any:
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        return postgresql.insert
    if dialect == "sqlite":
        return sqlite.insert
    raise NotImplementedError(f"no bulk insert for {dialect}")  # pragma: no cover


class RequestInterner:
    """Assigns ``prompt``/``request_params`` ids to requests, inserting new rows in bulk.

    Remembered ids are valid for the transaction that created them and later ones; use one
    interner per batch job (a generation call, a cache writer), not across a rollback.
    """

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], int] = {}

    def _resolve(
        self, kind: str, items: dict[str, Any], *, session: Session
    ) -> None:  # items: hash → value
        model: type[Prompt] | type[RequestParams] = Prompt if kind == "prompt" else RequestParams
        field = "messages" if kind == "prompt" else "body"
        missing = [h for h in items if (kind, h) not in self._ids]
        if not missing:
            return
        values: dict[str, dict[str, Any]] = {h: {"hash": h, field: items[h]} for h in missing}
        if kind == "prompt":
            # The shared instruction first (a prompt row of its own), then each prompt's rest.
            splits = {h: split_prefix(items[h]) for h in missing}
            prefixes = {prompt_hash(p): p for p, _ in splits.values() if p is not None}
            self._resolve("prompt", prefixes, session=session)
            for h, (prefix, rest) in splits.items():
                values[h]["prefix_id"] = (
                    self._ids[("prompt", prompt_hash(prefix))] if prefix is not None else None
                )
                values[h]["messages"] = rest
        table: Table = model.__table__  # type: ignore[union-attr]
        stmt = _insert(session)(table).on_conflict_do_nothing(index_elements=["hash"])
        for start in range(0, len(missing), _CHUNK):
            chunk = missing[start : start + _CHUNK]
            session.execute(stmt, [values[h] for h in chunk])
            for row_id, row_hash in session.execute(
                select(model.id, model.hash).where(col(model.hash).in_(chunk))
            ):
                self._ids[(kind, row_hash)] = int(row_id)

    def intern(
        self, records: Sequence[Mapping[str, Any]], *, session: Session
    ) -> list[tuple[int | None, int | None, dict[str, Any]]]:
        """``(prompt_id, params_id, rest)`` of each request, creating rows as needed."""
        splits = [split_request(r) for r in records]
        prompt_keys = [prompt_hash(s.messages) if s.messages is not None else None for s in splits]
        params_keys = [params_hash(s.body) if s.body is not None else None for s in splits]
        self._resolve(
            "prompt",
            {k: s.messages for k, s in zip(prompt_keys, splits, strict=True) if k is not None},
            session=session,
        )
        self._resolve(
            "params",
            {k: s.body for k, s in zip(params_keys, splits, strict=True) if k is not None},
            session=session,
        )
        return [
            (
                self._ids[("prompt", pk)] if pk is not None else None,
                self._ids[("params", bk)] if bk is not None else None,
                s.rest,
            )
            for pk, bk, s in zip(prompt_keys, params_keys, splits, strict=True)
        ]


def prompt_messages(prompt: Prompt, *, session: Session) -> list[Any]:
    """The whole message list of a prompt row (its shared prefix put back in front)."""
    if prompt.prefix_id is None:
        return list(prompt.messages)
    prefix = session.get(Prompt, prompt.prefix_id)  # the identity map keeps it: one read
    head = prompt_messages(prefix, session=session) if prefix is not None else []
    return head + list(prompt.messages)


def _join_ids(
    prompt_id: int | None, params_id: int | None, rest: Mapping[str, Any], *, session: Session
) -> dict[str, Any]:
    if prompt_id is None and params_id is None:
        return dict(rest)  # not normalised: the column holds the whole request
    prompt = session.get(Prompt, prompt_id) if prompt_id is not None else None
    params = session.get(RequestParams, params_id) if params_id is not None else None
    return join_request(
        prompt_messages(prompt, session=session) if prompt is not None else None,
        dict(params.body) if params is not None else None,
        rest,
    )


def stored_request(response: Response, *, session: Session) -> dict[str, Any]:
    """The full request of a response (messages and parameters; never credentials)."""
    return _join_ids(
        response.prompt_id, response.params_id, response.request or {}, session=session
    )


def cache_request(entry: LLMCacheEntry, *, session: Session) -> dict[str, Any]:
    """The full request payload of a cache entry (what its key is the hash of)."""
    return _join_ids(entry.prompt_id, entry.params_id, entry.request or {}, session=session)


def stored_messages(response: Response, *, session: Session) -> list[dict[str, Any]]:
    """The messages a response was asked with (``[]`` when none were stored)."""
    if response.prompt_id is not None:
        prompt = session.get(Prompt, response.prompt_id)
        return prompt_messages(prompt, session=session) if prompt is not None else []
    messages = (response.request or {}).get("messages")
    return list(messages) if isinstance(messages, list) else []
