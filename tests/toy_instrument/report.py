"""The toy report: one Markdown table through the report kit (every cell escaped)."""

from __future__ import annotations

import pandas as pd

from study.report.markdown import md_table
from tests.toy_instrument.analysis import CoinResult


def render(model: str, result: CoinResult) -> str:
    """The report's Markdown."""
    df = pd.DataFrame(
        [{"model": model, "n": result.n, "share": result.share, "low": result.ci_low,
          "high": result.ci_high}]
    )  # fmt: skip
    columns = [("model", "model", None), ("n", "answers", None), ("share", "share yes", None),
               ("low", "95% low", None), ("high", "95% high", None)]  # fmt: skip
    return "# Coin (toy)\n\n" + md_table(df, columns)
