"""What memory conflicts adds to the served simulator (its plugin's ``sim_server``)."""

from __future__ import annotations

from study.catalog.document import CatalogDocument
from study.conflicts.items import load_sample_banks
from study.conflicts.sim.mem0 import mem0_extraction_answerer
from study.conflicts.simulation import register_instances
from study.sim_endpoint import ServerParts


def server_parts(catalog: CatalogDocument) -> ServerParts:
    """The shipped banks' sides (bank requests over HTTP get the in-process known truth)
    and Mem0's memory-extraction prompt (the pipeline track's mem0 adapter)."""
    del catalog  # the banks are the instrument's own items, not the catalog's
    register_instances(load_sample_banks())
    return ServerParts(answerers=(mem0_extraction_answerer(),))
