"""Announce entry points the way an installed distribution does, without installing one.

``importlib.metadata`` finds a distribution by its ``*.dist-info`` folder on ``sys.path``; a
folder written under a temporary directory, with that directory put on the path (and on
``PYTHONPATH`` for the processes a test starts), is found exactly like a ``pip install``-ed
package's. The instrument registry is re-read on the way in and on the way out.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from driftlens_plugins.registry import ENTRY_POINT_GROUP, refresh


def write_distribution(
    root: Path, name: str, entries: Sequence[tuple[str, str]], *, group: str = ENTRY_POINT_GROUP
) -> Path:
    """Write ``root/<name>-0.1.dist-info`` announcing ``entries`` (``(name, "module:attr")``)."""
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8"
    )
    lines = [f"[{group}]", *(f"{key} = {value}" for key, value in entries)]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return info


@contextmanager
def installed_entry_points(
    root: Path, name: str, entries: Sequence[tuple[str, str]], *, group: str = ENTRY_POINT_GROUP
) -> Iterator[Path]:
    """Put a distribution announcing ``entries`` on the path while the block runs.

    Yields:
        The folder put on ``sys.path`` and ``PYTHONPATH``.
    """
    write_distribution(root, name, entries, group=group)
    before = os.environ.get("PYTHONPATH")
    sys.path.insert(0, str(root))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), before) if p)
    refresh()
    try:
        yield root
    finally:
        sys.path.remove(str(root))
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before
        refresh()
