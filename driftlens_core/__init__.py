"""DriftLens compiled core: drift metrics, statistics and calibration on arrays.

Pure functions, no I/O. Every compiled kernel has a pure-Python twin; see
:mod:`driftlens_core._impl` for how the path is chosen. Names are resolved lazily so
``import driftlens_core`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from driftlens_core._impl import implementation, use_implementation

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # drift metrics (metrics.py, compiled in _metrics.pyx)
    "dtw_distance": "driftlens_core.metrics",
    "levenshtein": "driftlens_core.metrics",
    "js_distance": "driftlens_core.metrics",
    "sri": "driftlens_core.metrics",
    "pair_drift": "driftlens_core.metrics",
    "PairDrift": "driftlens_core.metrics",
}

__all__ = ["implementation", "use_implementation", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'driftlens_core' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
