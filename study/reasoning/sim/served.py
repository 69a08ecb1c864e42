"""What reasoning drift adds to the served simulator (its plugin's ``sim_server``)."""

from __future__ import annotations

from study.catalog.document import CatalogDocument
from study.reasoning.sim.classify import classifier_from_catalog
from study.sim_endpoint import ServerParts


def server_parts(catalog: CatalogDocument) -> ServerParts:
    """Memory lines classified by exact catalog lookup (the heuristic for other lines), so
    every dose the server applies is the preset's dose for the line's true class."""
    entries = ((e.text, e.condition_class, e.category) for e in catalog.entries())
    return ServerParts(classify_memory=classifier_from_catalog(entries))
