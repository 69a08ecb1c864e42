"""Load the synthetic drift-table generator shared with ``bench/`` (bench is not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_path = Path(__file__).resolve().parents[2] / "bench" / "_simtable.py"
_spec = importlib.util.spec_from_file_location("driftlens_bench_simtable", _path)
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

simulate_table = _module.simulate_table


#: Per-condition keys of the ``driftlens stats`` JSON (the issue's schema).
CONDITION_KEYS = {
    "class",
    "n",
    "mean",
    "d_rel",
    "ci_low",
    "ci_high",
    "p_value",
    "p_adjusted",
    "cohens_d",
    "letters",
    "mdd",
    "equivalence_bound",
}
