"""Where a job's result is shown: the page (and its URL state) for each kind of job.

The ontology studio's kinds are listed here; each instrument's come from its plugin
(``result_pages``).
"""

from __future__ import annotations

from typing import Any

from driftlens_plugins import instruments
from study.jobs.records import JobRecord

#: The ontology studio's job kinds: the page file that shows the result and its query key.
STUDIO_PAGES: dict[str, tuple[str, str]] = {
    "ontology round": ("ontology_rounds.py", "round"),
    "ontology validate run": ("ontology_validation.py", "experiment"),
    "ontology refine": ("ontology_refinement.py", "loop"),
}


def result_pages() -> dict[str, tuple[str, str]]:
    """Every job kind with a result page: the studio's and each instrument's."""
    out = dict(STUDIO_PAGES)
    for plugin in instruments():
        out.update({r.kind: (r.page, r.param) for r in plugin.result_pages})
    return out


def result_link(job: JobRecord) -> tuple[str, dict[str, str], str] | None:
    """``(page file, query params, link text)`` of the page showing the job's result."""
    target = result_pages().get(job.kind)
    if target is None:
        return None
    page, param = target
    values: dict[str, Any] = {**job.scope, **(job.result or {})}
    value = values.get(param)
    params = {param: str(value)} if value is not None else {}
    return page, params, f"Open on the {page.removesuffix('.py').replace('_', ' ')} page"
