"""``--json`` output of the CLI commands: one JSON document, or one object per line."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from pathlib import Path
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


# JSON escapes C0 controls itself; DEL, C1 controls (``\x9b`` is a one-byte CSI on some
# terminals) and bidi overrides are escaped too, so non-ASCII text stays readable.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def echo_jsonl(records: Iterable[dict[str, Any]]) -> None:
    """Print one compact JSON object per line (non-ASCII text kept, controls escaped)."""
    for record in records:
        line = json.dumps(record, ensure_ascii=False)
        typer.echo(_UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group(0)):04x}", line))


def write_json(path: Path, value: Any) -> None:
    """Write ``value`` to ``path`` as indented JSON (NaN refused), its folder made if needed.

    Args:
        path: The ``--json-out`` file.
        value: A JSON-ready value (NaN already ``None``: a NaN left is a bug, not output).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, allow_nan=False) + "\n")
