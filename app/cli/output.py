"""``--json`` output of the CLI commands: one JSON document, or one object per line."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

import typer


def _plain(value: Any) -> Any:
    """A dataclass (or a list of them) as dicts; anything else unchanged."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def echo_json(value: Any, *, ensure_ascii: bool = True) -> None:
    """Print ``value`` (dataclasses become dicts) as one indented JSON document."""
    typer.echo(json.dumps(_plain(value), indent=2, ensure_ascii=ensure_ascii))


def echo_jsonl(records: Iterable[dict[str, Any]]) -> None:
    """Print one compact JSON object per line (non-ASCII text kept as is)."""
    for record in records:
        typer.echo(json.dumps(record, ensure_ascii=False))
