"""Values made ready for JSON: a non-finite float becomes ``None``, tuples become lists.

``json.dumps`` writes NaN and infinity as bare tokens that strict JSON readers refuse
(``stats.json`` is written with ``allow_nan=False``), so every result's ``to_dict`` passes
its values through :func:`json_ready` instead of keeping its own copy of the rule.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any


def json_ready(value: Any) -> Any:
    """``value`` with every non-finite float as ``None``, in dicts, lists and tuples too."""
    if isinstance(value, Real) and not isinstance(value, Integral):  # numpy floats too
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    return value
