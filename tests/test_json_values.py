"""study.json_values.json_ready: what every result's to_dict writes for non-finite numbers."""

from __future__ import annotations

import json
import math

import numpy as np

from study.json_values import json_ready


def test_non_finite_floats_become_none_everywhere_and_integers_stay_integers() -> None:
    value = {
        "nan": math.nan,
        "inf": np.float64("inf"),
        "f32": np.float32(0.5),
        "n": np.int64(3),
        "flag": True,
        "ci": (0.1, math.nan),
        "rows": [{"x": -math.inf, "y": 2.0}],
        "text": "NaN",
    }
    out = json_ready(value)
    assert out == {
        "nan": None, "inf": None, "f32": 0.5, "n": 3, "flag": True, "ci": [0.1, None],
        "rows": [{"x": None, "y": 2.0}], "text": "NaN",
    }  # fmt: skip
    assert isinstance(out["n"], np.integer) and out["flag"] is True
    json.dumps({k: v for k, v in out.items() if k != "n"}, allow_nan=False)  # strict JSON
