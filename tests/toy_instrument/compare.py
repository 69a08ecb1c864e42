"""The toy's comparison adapter: the share of yes of two coin runs, paired on item x sample.

Registered under the plugin's name when imported (the plugin's ``compare_module``); the
pairing, bootstrap and tests are the shared measurement-table ones
(:class:`study.compare.measures.MeasureAdapter`). An unreadable answer has no value and
is left out of its pair.
"""

from __future__ import annotations

import pandas as pd
from sqlmodel import Session

from storage.instrument_models import InstrumentRecord, InstrumentRun
from storage.repo.instrument_runs import (
    list_instrument_runs,
    read_records,
    require_instrument_run,
)
from study.compare.measures import MeasureAdapter
from study.compare.registry import register_adapter
from study.compare.types import CompareOptions, RunData
from tests.toy_instrument.store import INSTRUMENT

STATISTIC = "share yes"


class CoinAdapter(MeasureAdapter):
    """Coin runs as measurement tables: item = question id, unit = sample, value = yes."""

    name = INSTRUMENT
    headline = "Share of yes answers (B − A), paired on item and sample"
    default_margin: float | None = 0.1
    revision_tables: tuple[type, ...] = (InstrumentRun, InstrumentRecord)

    def list_runs(self, *, session: Session) -> list[str]:
        """Every stored coin run."""
        return [r.name for r in list_instrument_runs(INSTRUMENT, session=session)]

    def load(self, run: str, *, session: Session, options: CompareOptions) -> RunData:
        """One run's readable answers (raises ``NotFoundError`` naming an unknown run)."""
        row = require_instrument_run(INSTRUMENT, run, session=session)
        assert row.id is not None
        records = [r for r in read_records(row.id, session=session) if r.value is not None]
        measures = pd.DataFrame(
            {"item": [r.item for r in records], "unit": [r.unit for r in records],
             "statistic": STATISTIC, "scope": "all",
             "value": [float(r.value or 0.0) for r in records]},
            columns=["item", "unit", "statistic", "scope", "value"],
        )  # fmt: skip
        texts = {f"{r.item}|all|{r.unit}": r.text or "" for r in records}
        return RunData(
            name=run, label=f"{row.model} ({run})", simulated=row.simulated, measures=measures,
            kinds={STATISTIC: "binary"}, texts=texts,
        )  # fmt: skip


ADAPTER = register_adapter(CoinAdapter())
