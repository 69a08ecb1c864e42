"""The tier-2 claim writer's settings as a source-reliance run's provenance.

A run's tier-2 probes assert claims written by a model (``driftlens sources claims``,
stored with the writer's model, prompt hash, sampling and seed: revision 0013) or imported
from a reviewed file (no settings). The run row keeps the hash of the claims it used
(``claims_sha256``, :func:`study.sources.store.run_config`), so the stored claim set whose
claims for the run's items hash the same is the one the run asked. Its writers' settings
go through :mod:`study.judge_settings` like every other instrument's judges: one row per
writer in the report's provenance, and a set whose claims one writer wrote under
different settings is refused in one sentence, never reported as one writer.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session

from storage.hashing import content_hash
from storage.source_models import SourceClaim

#: The provenance note of the sources report.
NOTE = (
    "The tier-2 claims the run asserted, by writer: each writer's claims were all written "
    "under these settings (mixed settings are refused, never pooled)."
)


def claim_writer_settings(run_name: str, *, session: Session) -> tuple[tuple[str, str], ...]:
    """``(writer (claim set), settings)`` rows of the claims a stored run asserted.

    Empty for a run without tier-2 probes; one "not recorded" row when its claims match
    no stored claim set (a claims file never stored).

    Raises:
        InputError: one writer's claims of the set were written under different settings.
        NotFoundError: no such run.
    """
    from storage.repo.sources import claim_sets, require_source_run, source_claims

    run = require_source_run(run_name, session=session)
    wanted = run.config.get("claims_sha256")
    if wanted is None:
        return ()
    ids = [str(i) for i in run.config.get("items", {}).get("ids", [])]
    for name in sorted(claim_sets(session=session)):
        rows = {r.item_id: r for r in source_claims(name, session=session)}
        used = [rows[i] for i in ids if i in rows]
        if content_hash({r.item_id: r.claim for r in used}) != wanted:
            continue
        return writer_settings(name, used, what=f"the tier-2 claims of run {run_name!r}")
    return (("tier-2 claims", "from a claims file, not a stored claim set: not recorded"),)


def writer_settings(
    claim_set: str, rows: Sequence[SourceClaim], *, what: str
) -> tuple[tuple[str, str], ...]:
    """``(writer (claim set), settings)`` rows of some claims of one set.

    Raises:
        InputError: one writer's claims were written under different settings.
    """
    from study.judge_settings import collect_settings, refuse_mixed_settings, settings_lines

    by_writer = collect_settings(
        (f"{r.writer or 'imported claims'} (tier-2 claims, set {claim_set})", r.settings)
        for r in rows
    )
    refuse_mixed_settings(by_writer, what=what)
    return tuple((j, t) for j, t in settings_lines(by_writer))


def record_writer_roles(run_name: str, claim_set: str, model: str, *, session: Session) -> None:
    """Store the claim set's writers as the run's ``claim writer`` roles (:mod:`llm.roles`).

    A writer is not a grader (it writes the assertions the model under test then reads),
    so a run whose claims its own model wrote is recorded as such, not refused.
    """
    from llm.roles import check_role, record_roles
    from storage.repo.sources import source_claims
    from study.sources.plugin import PLUGIN

    writers = sorted({r.writer for r in source_claims(claim_set, session=session) if r.writer})
    roles = [
        check_role("claim writer", w, model, allow_self=True, where=f"run {run_name!r}")
        for w in writers
    ]
    record_roles(PLUGIN.name, run_name, roles, session=session)
    session.commit()


def run_role_lines(run_name: str, *, session: Session) -> list[str]:
    """The run's role lines for its report (``no model role recorded`` without a set)."""
    from llm.roles import role_lines
    from study.sources.plugin import PLUGIN

    return role_lines(PLUGIN.name, [run_name], session=session)
