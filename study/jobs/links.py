"""Where a job's result is shown: the page (and its URL state) for each kind of job."""

from __future__ import annotations

from typing import Any

from study.jobs.records import JobRecord

#: The page file that shows the result of each kind (the command path) and its query key.
RESULT_PAGES: dict[str, tuple[str, str]] = {
    "generate": ("runs.py", "run"),
    "label": ("runs.py", "run"),
    "analyze": ("analysis.py", "analysis"),
    "ontology round": ("ontology_rounds.py", "round"),
    "ontology validate run": ("ontology_validation.py", "experiment"),
    "ontology refine": ("ontology_refinement.py", "loop"),
}


def result_link(job: JobRecord) -> tuple[str, dict[str, str], str] | None:
    """``(page file, query params, link text)`` of the page showing the job's result."""
    target = RESULT_PAGES.get(job.kind)
    if target is None:
        return None
    page, param = target
    values: dict[str, Any] = {**job.scope, **(job.result or {})}
    value = values.get(param)
    params = {param: str(value)} if value is not None else {}
    return page, params, f"Open on the {page.removesuffix('.py').replace('_', ' ')} page"
