"""The LLM labelers of a generation run as model roles (:mod:`llm.roles`).

An ``llm:<spec>`` labeler labels the steps of the run's answers: when ``<spec>`` is the
model that generated the run it grades its own reasoning, which is refused in one sentence
unless ``--allow-self-judging``. Rule-based labelers (keywords, embeddings, the simulator)
play no model role. Every checked assignment is stored with the run.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session

from llm.roles import GENERATION, RoleAssignment, check_role, record_roles
from ontology.labelers.registry import parse_labeler_spec
from storage.errors import NotFoundError
from storage.models import GenerationRun, ModelSpecRow
from storage.repo import rounds as round_repo
from storage.repo.runs import require_run


def check_labeler_roles(
    run_name: str, labelers: Sequence[str], *, session: Session, allow_self: bool
) -> list[RoleAssignment]:
    """Check the role of every LLM labeler of ``labelers`` on ``run_name``; store nothing.

    A command that stores something before its first labeling round (a refinement loop's
    row) calls this first, so a refused labeler leaves nothing behind.

    Args:
        run_name: The generation run whose steps are labeled.
        labelers: Labeler specs (only ``llm:`` ones play a model role).
        session: Open session (nothing is written).
        allow_self: Whether the model under test may label its own steps.

    Returns:
        The assignments of the LLM labelers, in the order given.

    Raises:
        NotFoundError: No run of that name.
        ConfigError: A malformed labeler spec.
        InputError: An LLM labeler is the run's model and ``allow_self`` is false.
    """
    run = require_run(run_name, session=session)
    under_test = session.get(ModelSpecRow, run.model_spec_id)
    out: list[RoleAssignment] = []
    for spec in labelers:
        config = parse_labeler_spec(spec)
        if config.kind != "llm" or not config.model:
            continue
        out.append(
            check_role(
                "labeler",
                config.model,
                under_test.spec if under_test is not None else None,
                allow_self=allow_self,
                where=f"run {run_name!r}",
            )
        )
    return out


def labeler_roles(
    run_name: str, labelers: Sequence[str], *, session: Session, allow_self: bool
) -> list[RoleAssignment]:
    """Check and store the role of every LLM labeler of ``labelers`` on ``run_name``.

    Args:
        run_name: The generation run whose steps are labeled.
        labelers: Labeler specs (only ``llm:`` ones play a model role).
        session: Open session (the rows are flushed, the caller commits).
        allow_self: Whether the model under test may label its own steps.

    Returns:
        The assignments of the LLM labelers, in the order given.

    Raises:
        NotFoundError: No run of that name.
        ConfigError: A malformed labeler spec.
        InputError: An LLM labeler is the run's model and ``allow_self`` is false.
    """
    out = check_labeler_roles(run_name, labelers, session=session, allow_self=allow_self)
    record_roles(GENERATION, run_name, out, session=session)
    return out


def round_labeler_roles(
    number: int, labelers: Sequence[str], *, session: Session, allow_self: bool
) -> list[RoleAssignment]:
    """:func:`labeler_roles` on the run of labeling round ``number`` (the validation
    experiments relabel a round's responses, which that run's model wrote).

    Raises:
        NotFoundError: No round of that number (or its run is gone).
        InputError: An LLM labeler is the run's model and ``allow_self`` is false.
    """
    row = round_repo.get_round(number, session=session)
    if row is None:
        raise NotFoundError(f"no labeling round {number} in this workspace")
    run = session.get(GenerationRun, row.run_id)
    if run is None:
        raise NotFoundError(f"the run of labeling round {number} is no longer stored")
    return labeler_roles(run.name, labelers, session=session, allow_self=allow_self)
