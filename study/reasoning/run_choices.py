"""Which generation runs the reasoning-drift pages offer (the other instruments' runs left out).

Memory-conflict runs are generation runs too (their own prompt versions, ``conflict-…``),
and a workspace with the conflicts demo holds a dozen of them: they have no reasoning steps
to label, so Rounds, Validation and Analysis leave them out. Any other prompt version is a
reasoning run (``steps-v1`` from ``driftlens generate``, or an imported run's own).
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from storage.models import GenerationRun, LabelerSpec, OntologyVersion, Response, StepLabel

#: Prompt versions of the other instruments' generation runs start with one of these
#: (study/conflicts: the response and policy prompts; a test keeps them in step).
OTHER_INSTRUMENT_PROMPTS = ("conflict-",)


def reasoning_runs(*, session: Session) -> list[str]:
    """Names of the reasoning-drift runs, newest first."""
    rows = session.exec(
        select(GenerationRun.name)
        .where(
            *(
                ~col(GenerationRun.prompt_version).startswith(prefix)
                for prefix in OTHER_INSTRUMENT_PROMPTS
            )
        )
        .order_by(col(GenerationRun.id).desc())
    )
    return list(rows)


def runs_with_steps(runs: list[str], *, session: Session) -> list[str]:
    """The runs of ``runs`` (same order) holding at least one response with parsed steps."""
    if not runs:
        return []
    parsed = (
        select(Response.id)
        .where(Response.run_id == GenerationRun.id, Response.parse_status == "ok")
        .exists()
    )
    have = set(
        session.exec(select(GenerationRun.name).where(col(GenerationRun.name).in_(runs), parsed))
    )
    return [r for r in runs if r in have]


def labelled_with(run: str, *, session: Session, probe: int = 20) -> list[tuple[str, str]]:
    """``(labeler, name@N)`` pairs the run's first parsed responses were labeled under.

    Newest version first. Only ``probe`` responses are read (a page calls this on every
    render of a run with hundreds of thousands of responses): a run labeled under a version
    has labels on its first responses.
    """
    first = (
        select(Response.id)
        .join(GenerationRun, col(GenerationRun.id) == Response.run_id)
        .where(GenerationRun.name == run, Response.parse_status == "ok")
        .order_by(col(Response.id))
        .limit(probe)
    )
    rows = session.exec(
        select(LabelerSpec.name, OntologyVersion.name, OntologyVersion.version)
        .join(StepLabel, col(StepLabel.labeler_id) == LabelerSpec.id)
        .join(OntologyVersion, col(OntologyVersion.id) == StepLabel.ontology_version_id)
        .where(col(StepLabel.response_id).in_(first))
        .distinct()
    ).all()
    ordered = sorted(rows, key=lambda r: (r[1] != "driftlens", r[1], -r[2], r[0] or ""))
    return [(labeler or "", f"{name}@{number}") for labeler, name, number in ordered]
