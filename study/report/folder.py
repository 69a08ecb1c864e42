"""Report folders replaced as a whole: written beside the target, renamed into place.

:func:`staged_report_folder` yields a fresh hidden sibling (``.NAME.new-XXXXXXXX``) to
write into; only when the block finishes is it renamed onto the target (the previous
folder is moved aside first and then deleted). A command killed while writing leaves the
previous report untouched (plus a hidden sibling), never a mix of new, stale and partial
files. Every instrument's report writer uses it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from storage.errors import InputError

#: Files that mark a folder as a report folder this workbench may replace (the drift and
#: sources reports, the disposition report, the memory-conflicts report).
REPORT_MARKERS: tuple[str, ...] = (
    "stats.json",
    "report.md",
    "report.html",
    "provenance.json",
    "disposition.html",
    "conflicts_report.html",
)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def folder_slug(name: str) -> str:
    """A folder name for a run or study name: itself when it is a safe file name, else its
    safe characters plus a short hash of the whole name, so two names never share a folder
    (``a/b`` and ``a_b`` differ) and no name reaches outside its parent (``..``)."""
    safe = _UNSAFE.sub("_", name).strip("._") or "run"
    if safe == name:
        return name
    return f"{safe[:60]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _sibling(target: Path, kind: str) -> Path:
    return target.parent / f".{target.name}.{kind}-{uuid.uuid4().hex[:8]}"


def check_replaceable(target: Path) -> None:
    """Refuse to replace a folder that is not a report folder.

    Raises:
        InputError: ``target`` is a file, or a non-empty folder without a report in it.
    """
    if target.exists() and not target.is_dir():
        raise InputError(f"{target} is a file; the report needs a folder there.")
    has_report = any((target / m).exists() for m in REPORT_MARKERS)
    if target.is_dir() and not has_report and any(target.iterdir()):
        raise InputError(
            f"{target} holds other files and no report; choose a new or empty folder "
            "(a report folder is replaced as a whole)."
        )


@contextmanager
def staged_report_folder(target: Path) -> Iterator[Path]:
    """Yield a folder to write a report into; on success it becomes ``target``.

    Args:
        target: the report folder (created or replaced as a whole).

    Raises:
        InputError: ``target`` exists and is not a report folder (see
            :func:`check_replaceable`).
    """
    target = Path(target)
    check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    stage = _sibling(target, "new")
    stage.mkdir()
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    old = None
    if target.exists():
        old = _sibling(target, "old")
        os.replace(target, old)
    os.replace(stage, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def final_path(path: Path, stage: Path, target: Path) -> Path:
    """Where ``path``, written inside ``stage``, lies once the stage is renamed to ``target``.

    Writers return the paths they wrote (inside the stage); callers report the final ones.
    """
    return Path(target) / Path(path).relative_to(stage)


def final_paths(files: Mapping[str, Path], stage: Path, target: Path) -> dict[str, Path]:
    """:func:`final_path` for every value of a ``{name: path}`` mapping."""
    return {name: final_path(path, stage, target) for name, path in files.items()}


def fresh_report_folder(parent: Path, stem: str, *, taken: Callable[[Path], bool]) -> Path:
    """Create and return a new empty folder ``parent/stem`` (or ``stem-2``, ``stem-3`` …).

    The folder is claimed by creating it, so two commands writing at once never get the
    same one; ``taken`` also skips names a stored record still points at (a folder that
    was deleted from disk is not free while a stored analysis names it).

    Args:
        parent: Where the report folders live (e.g. the workspace's ``reports``).
        stem: The folder name to start from.
        taken: Whether a stored record already names this folder.
    """
    parent.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        folder = parent / (stem if n == 1 else f"{stem}-{n}")
        n += 1
        if taken(folder):
            continue
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
