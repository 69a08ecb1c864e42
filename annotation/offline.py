"""A study's tasks without a Label Studio server: how many a selection makes, and a JSON file.

The JSON file is Label Studio's task import format (a list of ``{"data": {...}}``), so it
can be imported by hand into any Label Studio project with the study's labeling config
(``driftlens annotate config``), or annotated offline with any tool that reads it. Every
task keeps its stable ``external_key``, so annotations made on it can be matched back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlmodel import Session

from annotation.selection import Selection
from annotation.tasks import build_tasks, count_tasks


@dataclass(frozen=True)
class TaskPreview:
    """How many tasks a selection makes.

    Attributes:
        study: the study name.
        tasks: tasks the selection makes (after its ``limit``).
        available: tasks the selection's filters match before the ``limit``.
    """

    study: str
    tasks: int
    available: int


def preview_tasks(study: str, selection: Selection, *, session: Session) -> TaskPreview:
    """Count the tasks of a study for a selection, with and without its limit.

    Raises:
        InputError: unknown study, or the selection names rows that do not exist.
    """
    available = count_tasks(study, selection, session=session)
    shown = available if selection.limit is None else min(selection.limit, available)
    return TaskPreview(study=study, tasks=shown, available=available)


def tasks_json(study: str, selection: Selection, *, session: Session) -> bytes:
    """The study's tasks for a selection in Label Studio's import format (UTF-8 JSON).

    Raises:
        InputError: unknown study, or the selection names rows that do not exist.
    """
    tasks = build_tasks(study, selection, session=session)
    payload = [{"data": t.data} for t in tasks]
    return json.dumps(payload, ensure_ascii=False, indent=1).encode("utf-8")
