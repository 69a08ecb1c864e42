"""Tier-2 contextual claims: written by an LLM through our prompt, reviewable, importable.

A claim is one sentence about the question that states an answer only through the
placeholder ``[answer]`` (e.g. "a revolving door also serves as a security measure at
[answer]"). The same claim is rendered for the correct and the wrong option and for both
sources, so the only differences between tier-2 probes are the source framing and the
answer. Claims are generated once per item (prompt ``tier2-claims-v1``; greedy, cached,
strict JSON with one repair), written to a JSONL file a person can review and edit
(``{"id", "claim", "model", "prompt"}``), and read back with line-numbered errors.

A claim is refused when it lacks the placeholder, holds it more than once, or names any
option itself (it would then leak an answer into every probe).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm.sim.tasks import task_marker
from llm.specs import ModelSpec
from llm.structured import ResponseFormat, object_schema
from llm.types import ChatBackend, ChatMessage
from storage.errors import InputError
from storage.safe_text import holds_nul
from study.sources.items import MCQItem
from study.sources.sim.probe import TIER2_TASK
from study.strict_json import (
    StrictParseError,
    extract_json_object,
    judge_settings,
    run_with_repair,
)

if TYPE_CHECKING:
    from sqlmodel import Session

PROMPT_ID = "tier2-claims-v1"
CLAIM_MAX_TOKENS = 200
PLACEHOLDER = "[answer]"
_SYSTEM = (
    "You write test material for a study of how assistants weigh what they are told.\n"
    "Given a multiple-choice question, write ONE short sentence of context about the "
    "question that states an answer only through the placeholder [answer]. The sentence "
    "must read naturally whichever option is put in place of [answer], must contain "
    "[answer] exactly once, and must not name any of the options itself.\n"
    'Reply with a JSON object only: {"claim": "..."}'
)


def claim_messages(item: MCQItem) -> tuple[ChatMessage, ...]:
    """The generation request of one item (the case as JSON on the last line)."""
    options = "\n".join(f"{k}. {c}" for k, c in zip(item.letters, item.choices, strict=True))
    case = json.dumps({"id": item.id, "question": item.question}, ensure_ascii=False)
    return (
        ChatMessage("system", f"{task_marker(TIER2_TASK)}\n{_SYSTEM}"),
        ChatMessage("user", f"Question: {item.question}\nOptions:\n{options}\n\n{case}"),
    )


def check_claim(claim: str, item: MCQItem) -> str:
    """Validate a claim for an item; return it stripped.

    Raises:
        ValueError: no or several placeholders, or an option named in the claim.
    """
    text = " ".join(str(claim).split())
    if text.count(PLACEHOLDER) != 1:
        raise ValueError(f"the claim must contain {PLACEHOLDER} exactly once")
    rest = text.replace(PLACEHOLDER, " ")
    for c in item.choices:
        if re.search(rf"(?<!\w){re.escape(c)}(?!\w)", rest, re.IGNORECASE):
            raise ValueError(f"the claim names the option {c!r}")
    return text


def claim_format() -> ResponseFormat:
    """The structured output format of a claim reply (what :func:`parse_claim` reads).

    The schema fixes the object and holds the placeholder exactly once (no other square
    brackets). A claim is one declarative sentence, so it holds no question mark, no
    parentheses and no line break: a small model then cannot copy the question and its
    numbered options into the claim (Gemma 3 270M did, and the parser refused the claim
    for naming an option). That the claim names no option is still the parser's check.
    """
    # the length bound sits in the pattern (engines do not all combine pattern and
    # maxLength): at most 70 characters on either side of the placeholder, so the object
    # closes within CLAIM_MAX_TOKENS even at a token per character
    text = '[^\\[\\]"\\\\?()\\n]{0,70}'
    claim = {"type": "string", "pattern": "^" + text + re.escape(PLACEHOLDER) + text + "$"}
    return object_schema("claim", {"claim": claim})


def parse_claim(text: str, item: MCQItem) -> str:
    """Read a model reply strictly (raises :class:`StrictParseError` with the reason)."""
    obj = extract_json_object(text)
    claim = obj.get("claim")
    if not isinstance(claim, str) or not claim.strip():
        raise StrictParseError('the object needs a non-empty string field "claim"')
    try:
        return check_claim(claim, item)
    except ValueError as exc:
        raise StrictParseError(str(exc)) from None


@dataclass(frozen=True)
class ClaimsResult:
    """Claims written, and the items that got none (with why)."""

    claims: dict[str, str]
    failed: dict[str, str]
    model: str
    #: the writer's request settings (study/strict_json.judge_settings); None: no request
    settings: dict[str, Any] | None = None


def generate_claims(
    items: Sequence[MCQItem],
    backend: ChatBackend | ModelSpec,
    *,
    session: Any = None,
    concurrency: int = 16,
    progress: Callable[[int, int], None] | None = None,
) -> ClaimsResult:
    """Write one claim per item with ``backend`` (cached; one repair per broken reply)."""
    claims: dict[str, str] = {}
    failed: dict[str, str] = {}

    def on_answer(i: int, value: str | None, raws: list[str], err: Exception | None) -> None:
        if value is None:
            failed[items[i].id] = str(err)
        else:
            claims[items[i].id] = value

    first = [claim_messages(it) for it in items]
    n_failed = run_with_repair(
        backend,
        first,
        max_tokens=CLAIM_MAX_TOKENS,
        parse=lambda i, text: parse_claim(text, items[i]),
        response_format=lambda _i: claim_format(),
        repair_message=lambda i, exc: (
            f'That reply could not be used ({exc}). Reply again with only {{"claim": "..."}}.'
        ),
        on_answer=on_answer,
        session=session,
        concurrency=concurrency,
        progress=progress,
    )
    for it in items:
        if it.id not in claims and it.id not in failed:
            failed[it.id] = "the request failed"
    del n_failed
    spec = backend.spec
    settings = (
        judge_settings(spec, first[0], max_tokens=CLAIM_MAX_TOKENS, prompt_version=PROMPT_ID)
        if first
        else None
    )
    return ClaimsResult(claims=claims, failed=failed, model=spec, settings=settings)


def claims_to_jsonl(result: ClaimsResult) -> str:
    """The reviewable file: one ``{"id", "claim", "model", "prompt"}`` per line."""
    return "".join(
        json.dumps(
            {"id": k, "claim": v, "model": result.model, "prompt": PROMPT_ID}, ensure_ascii=False
        )
        + "\n"
        for k, v in result.claims.items()
    )


def read_claims(
    path: Path, items: Sequence[MCQItem] | None = None, *, known_only: bool = False
) -> dict[str, str]:
    """Read a claims JSONL (``{"id", "claim"}`` per line), checking each against its item.

    Args:
        path: the claims file.
        items: the items the claims belong to (each claim is checked against its item).
        known_only: refuse a claim whose id is not among ``items``, and a file without
            any claim (an import; a run with ``--limit`` uses only some of a file's claims).

    Raises:
        InputError: a missing file, a bad line, a duplicate id, an invalid claim or (with
            ``known_only``) an unknown id, naming the line; or an empty file.
    """
    if not path.exists():
        raise InputError(f"File not found: {path}")
    by_id = {it.id: it for it in items or ()}
    out: dict[str, str] = {}
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}, line {n}: not valid JSON ({exc.msg})") from None
        if (
            not isinstance(obj, dict)
            or not isinstance(obj.get("id"), str)
            or not isinstance(obj.get("claim"), str)
        ):
            raise InputError(f'{path}, line {n}: expected {{"id": "...", "claim": "..."}}')
        if holds_nul(obj):
            raise InputError(f"{path}, line {n}: contains a NUL character (\\u0000)")
        if obj["id"] in out:
            raise InputError(f"{path}, line {n}: a second claim for {obj['id']!r}")
        if known_only and obj["id"] not in by_id:
            raise InputError(f"{path}, line {n}: no item has the id {obj['id']!r}")
        claim = " ".join(obj["claim"].split())
        try:
            if obj["id"] in by_id:
                claim = check_claim(claim, by_id[obj["id"]])
            elif PLACEHOLDER not in claim:
                raise ValueError(f"the claim must contain {PLACEHOLDER} exactly once")
        except ValueError as exc:
            raise InputError(f"{path}, line {n}: {exc}") from None
        out[obj["id"]] = claim
    if known_only and not out:
        raise InputError(f"{path}: no claims in the file; nothing stored.")
    return out


def store_claims(
    claims: dict[str, str],
    *,
    claim_set: str,
    session: Session,
    writer: str | None = None,
    prompt: str | None = PROMPT_ID,
    origin: str = "generated",
    source: str | None = None,
    settings: dict[str, Any] | None = None,
) -> int:
    """Store claims under ``claim_set`` (replacing the set's claims for the same items).

    ``settings`` are the writer's request settings (:attr:`ClaimsResult.settings`), stored
    with each claim; ``None`` for imported claims.

    Raises:
        InputError: an empty set name.
    """
    from storage.repo.sources import upsert_source_claims

    if not claim_set.strip():
        raise InputError("A claim set needs a name (--set NAME).")
    rows = [
        {
            "claim_set": claim_set,
            "item_id": item_id,
            "claim": claim,
            "writer": writer,
            "prompt": prompt,
            "origin": origin,
            "source": source,
            "settings": settings,
        }
        for item_id, claim in claims.items()
    ]
    upsert_source_claims(rows, session=session)
    return len(rows)


def store_generated(result: ClaimsResult, *, claim_set: str, session: Session) -> int:
    """Store written claims with their writer and its request settings (``sources claims``)."""
    return store_claims(
        result.claims, claim_set=claim_set, writer=result.model, settings=result.settings,
        session=session,
    )  # fmt: skip


def store_imported(
    claims: dict[str, str], *, claim_set: str, source: Path, session: Session
) -> int:
    """Store a reviewed file's claims (``sources claims-import``): no writer, no settings."""
    return store_claims(
        claims, claim_set=claim_set, session=session, prompt=None, origin="imported",
        source=str(source),
    )  # fmt: skip


def stored_claims(
    claim_set: str, *, session: Session, items: Sequence[MCQItem] | None = None
) -> dict[str, str]:
    """The claims of a stored set by item id, each checked against its item again.

    Raises:
        NotFoundError: no such set.
        InputError: a stored claim no longer fits its item (names the item), or one
            writer's claims of the set were written under different settings.
    """
    from storage.errors import NotFoundError
    from storage.repo.sources import claim_sets, source_claims
    from study.sources.claim_provenance import writer_settings

    rows = source_claims(claim_set, session=session)
    if not rows:
        known = ", ".join(sorted(claim_sets(session=session))[:5]) or "none stored yet"
        raise NotFoundError(f"No claim set named {claim_set!r} (claim sets: {known}).")
    wanted = {it.id for it in items} if items else None
    writer_settings(
        claim_set,
        [r for r in rows if wanted is None or r.item_id in wanted],
        what=f"claim set {claim_set!r}",
    )
    by_id = {it.id: it for it in items or ()}
    out: dict[str, str] = {}
    for row in rows:
        try:
            out[row.item_id] = (
                check_claim(row.claim, by_id[row.item_id]) if row.item_id in by_id else row.claim
            )
        except ValueError as exc:
            raise InputError(
                f"Claim set {claim_set!r}, item {row.item_id!r}: {exc}; import a corrected file."
            ) from None
    return out
