"""Issue 37 item 4: a comparison with no informative item says so, never "equivalent"."""

from __future__ import annotations

import numpy as np
import pandas as pd

from study.compare.measures import paired_rows
from study.compare.service import _adjust
from study.compare.types import CompareOptions, RunData


def _run(name: str, values: np.ndarray) -> RunData:
    """A binary run: 40 items x 6 units, one value per unit."""
    rows = [
        {"item": f"s{i:02d}", "unit": f"p{u}", "statistic": "aligned rate", "scope": "b",
         "value": float(values[i, u])}
        for i in range(values.shape[0]) for u in range(values.shape[1])
    ]  # fmt: skip
    return RunData(name, name, True, pd.DataFrame(rows), {"aligned rate": "binary"})


def _verdicts(a: RunData, b: RunData) -> list[str]:
    opts = CompareOptions(n_boot=400, seed=1)
    rows = paired_rows(a, b, sorted(a.items), options=opts, margin=0.05)
    return [r.verdict for r in _adjust(rows, opts.alpha)]


def test_every_answer_in_no_stance_is_no_information_not_equivalent() -> None:
    # the classifier put every answer in no_stance: aligned is 0 everywhere in both arms,
    # whatever the arms' true rates (the issue's arms differ by -25.7 points)
    zeros = np.zeros((40, 6))
    a, b = _run("a", zeros), _run("b", zeros)
    assert _verdicts(a, b) == ["no information"]  # before: "equivalent" ([0, 0] in ±5 pp)
    rows = paired_rows(a, b, sorted(a.items), options=CompareOptions(n_boot=400), margin=0.05)
    assert rows[0].n_informative == 0


def test_the_same_informative_study_can_still_be_equivalent_or_different() -> None:
    """Known dose: identical varied answers are equivalent; a 30-point shift is different."""
    rng = np.random.default_rng(3)
    base = (rng.random((40, 6)) < 0.5).astype(float)
    assert _verdicts(_run("a", base), _run("b", base.copy())) == ["equivalent"]
    shifted = np.where(rng.random((40, 6)) < 0.6, 0.0, base)
    assert _verdicts(_run("a", base), _run("b", shifted)) == ["different"]
    rows = paired_rows(_run("a", base), _run("b", base), sorted(_run("a", base).items),
                       options=CompareOptions(n_boot=400), margin=0.05)  # fmt: skip
    assert rows[0].n_informative == 40
