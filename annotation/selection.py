"""What to push to Label Studio: a selection over stored rows, and the tasks built from it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from storage.errors import InputError


class Selection(BaseModel):
    """What to push: filters over stored rows (``--select key=value``, repeatable).

    Attributes:
        questions: question external ids.
        filter: LLM-filter label of the questions (``ACCEPT``/``REJECT``).
        tier: benchmark tier (``core``, ``relaxed``, ``none``).
        run: generation run name (helpfulness, distraction, label_check).
        conditions: response conditions (perturbation keys or ``baseline``).
        condition_class: ``noise``, ``attribute``, ``life_event``... (responses or memories).
        catalog: perturbation catalog name (orthogonality; newest version).
        labeler: labeler name or key (label_check).
        ontology: ``NAME`` or ``NAME@VERSION`` (label_check).
        dimension: persona-pair dimension (default: one per question, by hash).
        disposition: disposition study name (``disposition_check``, ``test_awareness``).
        arms: arms of that study (default: every arm).
        batteries: batteries file (YAML/CSV) the study ran (default: the shipped sample).
        judge: classifier model whose categories are checked (default: the first stored).
        claim_set: stored tier-2 claim set of the source-reliance instrument (claim_check).
        items: the multiple-choice items file those claims are about (default: shipped).
        limit: at most this many tasks, chosen by a seeded hash order so that a larger
            limit always contains the smaller one.
        unit: what ``limit`` counts: ``task`` (a simple random sample of tasks) or
            ``question`` (a cluster sample: ``limit`` questions drawn in the seeded order,
            every task of each; for a metric that needs every item of a question labelled,
            e.g. every step of a trajectory pair).
        seed: seed of that order.
        stratify: a field of the tasks' data; with ``limit``, a stratified random slice
            (:func:`annotation.slice_design.stratified_draw`), probabilities stored.
        active: with ``limit``, about that many tasks drawn with more where the study's
            judges disagree (:func:`annotation.slice_design.active_draw`), probabilities
            stored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    questions: tuple[str, ...] = ()
    filter: str | None = None
    tier: str | None = None
    run: str | None = None
    conditions: tuple[str, ...] = ()
    condition_class: str | None = None
    catalog: str | None = None
    labeler: str | None = None
    ontology: str | None = None
    dimension: str | None = None
    disposition: str | None = None
    arms: tuple[str, ...] = ()
    batteries: str | None = None
    judge: str | None = None
    claim_set: str | None = None
    items: str | None = None
    limit: int | None = Field(default=None, ge=1)
    unit: Literal["task", "question"] = "task"
    seed: int = 0
    stratify: str | None = None
    active: bool = False


_LIST_FIELDS = {"questions", "conditions", "arms"}


def parse_selection(items: Sequence[str]) -> Selection:
    """Parse ``key=value`` items (lists comma-separated) into a :class:`Selection`.

    Raises:
        InputError: an item is not ``key=value`` or names an unknown key.
    """
    values: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise InputError(f"Selection {item!r} is not key=value (e.g. run=demo, limit=50).")
        if key == "question":
            key = "questions"
        if key == "condition":
            key = "conditions"
        if key == "arm":
            key = "arms"
        if key in _LIST_FIELDS:
            values[key] = tuple(v.strip() for v in value.split(",") if v.strip())
        else:
            values[key] = value.strip()
    try:
        return Selection(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "selection"
        known = ", ".join(sorted(set(Selection.model_fields) - {"version"}))
        raise InputError(
            f"Invalid selection {where}: {first.get('msg')} (keys: {known})."
        ) from None


@dataclass(frozen=True)
class TaskSpec:
    """One task to push: its stable key and the data object Label Studio receives."""

    key: str
    data: dict[str, Any]
