"""A response's parsed steps stored as spans of its own text: the same steps, fewer bytes.

The parser's steps are nearly always exact substrings of the response text (the inside
of a ``<step_N>`` tag, stripped), so storing them as strings keeps a second copy of most
of the text (~640 of ~2,300 bytes per response at the seed study's size). In the stored
``response.steps`` list each element is either

* a two-integer list ``[start, end]``: the step is ``text[start:end]`` (Python string
  indices, i.e. code points, never bytes), or
* a string: the step itself, for a step that is not an exact substring of the text (its
  HTML entities were decoded, say) or one shorter than :data:`MIN_SPAN_CHARS`, where a
  span would save nothing.

The element's type is the flag: a list of strings only (every row written before revision
``0010_step_spans``, and every row written through an ORM object) is valid stored form,
and the number of elements is still the number of steps, so SQL can count steps with
``json_array_length`` as before. Readers never see this form: ORM objects are unpacked
when they are loaded (``storage.models``), and the one column-level reader
(``study.reasoning.trajectories.label_run``) calls :func:`unpack_steps` itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func
from sqlmodel import Session

#: Steps shorter than this stay strings: ``[1234,1250]`` costs about as much as they do.
MIN_SPAN_CHARS = 12

StoredSteps = list[Any]  # each element a str or a [start, end] list


def pack_steps(text: str | None, steps: Sequence[str]) -> StoredSteps:
    """The stored form of ``steps`` (see the module docstring); lossless.

    Each step is looked for after the previous one first (steps come in document order),
    then anywhere in the text; any occurrence is exact, so either gives the same step back.

    Args:
        text: the response text the steps were parsed from (``None``: no text).
        steps: the parsed steps.

    Returns:
        A new list: spans for the steps found in ``text``, the other steps as strings.
    """
    if not text:
        return list(steps)
    out: StoredSteps = []
    cursor = 0
    for step in steps:
        start = -1
        if len(step) >= MIN_SPAN_CHARS:
            start = text.find(step, cursor)
            if start < 0:
                start = text.find(step)
        if start < 0:
            out.append(step)
            continue
        end = start + len(step)
        out.append([start, end])
        cursor = end
    return out


def unpack_steps(text: str | None, stored: Sequence[Any] | None) -> list[str]:
    """The steps of a stored ``steps`` value (the inverse of :func:`pack_steps`).

    Args:
        text: the response's text.
        stored: the stored list (strings and ``[start, end]`` spans), or ``None``.

    Raises:
        ValueError: a span that does not fit the text (the row was edited by hand after
            it was written: the text changed without its steps).
    """
    if not stored:
        return []
    out: list[str] = []
    for item in stored:
        if isinstance(item, str):
            out.append(item)
            continue
        start, end = item
        if text is None or not 0 <= start <= end <= len(text):
            raise ValueError(
                f"a stored step span [{start}, {end}] does not fit its response text "
                f"({'no text' if text is None else f'{len(text)} characters'})"
            )
        out.append(text[start:end])
    return out


def has_spans(stored: Sequence[Any] | None) -> bool:
    """Whether a stored ``steps`` value holds any span (else it is the plain list)."""
    return any(not isinstance(item, str) for item in stored or ())


def step_count_sql(session: Session, steps: Any) -> Any:
    """SQL for the number of parsed steps in a stored ``steps`` column (its JSON array length).

    The stored form keeps one element per step (see the module docstring), so no row needs
    unpacking; PostgreSQL stores the column as ``jsonb``.
    """
    if session.get_bind().dialect.name == "postgresql":
        return func.jsonb_array_length(steps)
    return func.json_array_length(steps)
