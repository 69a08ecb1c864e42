"""Generation runs as lines of the Runs page's listing (:class:`driftlens_plugins.RunLine`).

Every instrument that stores its runs as generation runs (:mod:`storage.repo.runs`) lists
them the same way: name, model, status, when, and the responses stored. The instrument
chooses which runs are its own and the page that shows one.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session, col, select

from driftlens_plugins import RunLine
from storage.models import GenerationRun, ModelSpecRow
from storage.repo.runs import response_counts


def generation_run_lines(
    runs: Sequence[GenerationRun], *, session: Session, page: str | None, param: str = "run"
) -> list[RunLine]:
    """One listing line per run, in the order given.

    Args:
        runs: the instrument's generation runs.
        session: workspace session (read only).
        page: the module of the page that opens one run (``None``: none does).
        param: the query key that page opens a run by.
    """
    ids = [r.id for r in runs if r.id is not None]
    counts = response_counts(ids, session=session)
    spec_ids = {r.model_spec_id for r in runs}
    specs = {
        s.id: s
        for s in session.exec(select(ModelSpecRow).where(col(ModelSpecRow.id).in_(spec_ids)))
    } if spec_ids else {}  # fmt: skip
    lines = []
    for r in runs:
        assert r.id is not None
        spec = specs.get(r.model_spec_id)
        lines.append(
            RunLine(
                name=r.name,
                model=spec.spec if spec is not None else "",
                created=f"{r.created_at:%Y-%m-%d %H:%M}",
                status=r.status,
                simulated=r.simulated or bool(spec is not None and spec.simulated),
                details=(("responses", counts[r.id]),),
                page=page,
                query=((param, r.name),) if page is not None else (),
            )
        )
    return lines
