"""Paired comparison of runs, shared by every instrument (issue #21).

``compare_runs`` (service), the adapter registry (one adapter per instrument in
``study/<instrument>/compare.py``), the generic pairing of measurement tables, the typed
results and the comparison report.
"""

from study.compare.registry import adapter_names, get_adapter, register_adapter
from study.compare.service import (
    compare_runs,
    data_revision,
    matching_lines,
    parse_margin,
    run_choices,
)
from study.compare.types import CompareOptions, Comparison, ItemDiff, RunData, StatRow

__all__ = [
    "CompareOptions",
    "Comparison",
    "ItemDiff",
    "RunData",
    "StatRow",
    "adapter_names",
    "compare_runs",
    "data_revision",
    "get_adapter",
    "matching_lines",
    "parse_margin",
    "register_adapter",
    "run_choices",
]
