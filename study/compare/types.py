"""Typed results of a run comparison (``driftlens compare``, the Compare page, the report).

Every instrument's adapter turns its runs into :class:`RunData`; the shared service pairs
them (:mod:`study.compare.service`) into :class:`StatRow` rows, one per statistic, scope and
pair of runs, and wraps everything in a :class:`Comparison`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

#: How an outcome is tested next to the bootstrap interval: exact McNemar for 0/1
#: outcomes, Wilcoxon signed-rank (and the sign test) for ordinal or continuous ones.
Kind = Literal["binary", "ordinal"]
#: What a row says: the adjusted test separates the runs, the TOST puts the difference
#: inside the margin, or neither; ``no information`` when no item is informative (every
#: answer of both runs has one and the same value: a classifier that put every answer in
#: ``no_stance`` gives 0 vs 0 with a zero-width interval, which is no evidence of anything).
Verdict = Literal["different", "equivalent", "inconclusive", "untestable", "no information"]


@dataclass(frozen=True)
class CompareOptions:
    """Settings of one comparison.

    Attributes:
        labeler: the reasoning-drift labeler whose trajectories are compared.
        study: the disposition study the arms belong to.
        margin: equivalence margin in the statistic's units; ``None`` takes the adapter's
            default, ``math.nan`` (``--margin mdd``) each comparison's own MDD.
        alpha: level of the tests, the BH family and the TOST.
        n_boot: bootstrap replicates.
        seed: bootstrap seed.
        top_items: how many most-different items the result keeps (with both texts).
        ontology_version: the reasoning ontology version (default: latest).
    """

    labeler: str | None = None
    study: str | None = None
    margin: float | None = None
    alpha: float = 0.05
    n_boot: int = 2000
    seed: int = 0
    top_items: int = 20
    ontology_version: str | None = None


@dataclass(frozen=True)
class RunData:
    """One run as an adapter loaded it.

    Attributes:
        name: the run's name as given.
        label: display name (model and run).
        simulated: whether its answers came from the simulator.
        measures: long table ``item, unit, statistic, scope, value`` (one row per paired
            unit: an answer to one probe and sample, one judge's score, …).
        kinds: statistic → :data:`Kind`.
        texts: ``item|scope|unit``, ``item|unit`` or ``item`` → what the run answered (side by side,
            escaped by the renderer).
        extra: what the adapter's own pairing needs (reasoning: the drift table).
    """

    name: str
    label: str
    simulated: bool
    measures: pd.DataFrame
    kinds: Mapping[str, Kind]
    texts: Mapping[str, str] = field(default_factory=dict)
    extra: Any = None

    @property
    def items(self) -> set[str]:
        """Every item the run answered."""
        return set(self.measures["item"].astype(str)) if len(self.measures) else set()


@dataclass(frozen=True)
class Matching:
    """How two runs' items matched: the comparison uses only the shared ones."""

    run_a: str
    run_b: str
    shared: int
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    unpaired_units: int = 0


@dataclass(frozen=True)
class StatRow:
    """``B − A`` for one statistic and scope of one pair of runs."""

    run_a: str
    run_b: str
    statistic: str
    scope: str
    kind: str
    value_a: float
    value_b: float
    diff: float
    ci_low: float
    ci_high: float
    se: float
    p_boot: float
    test: str
    p_test: float
    test_detail: str
    mdd: float
    margin: float
    tost_p: float
    n_items: int
    p_exact: float = math.nan  # exact McNemar p of a binary row (NaN otherwise)
    # items whose answers are not all of the one value every answer of both runs takes
    # (-1: not counted, as rows of adapters with their own statistics)
    n_informative: int = -1
    p_adjusted: float = math.nan
    p_test_adjusted: float = math.nan
    verdict: Verdict = "untestable"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (NaN becomes ``None``)."""
        out: dict[str, Any] = {}
        for k, v in self.__dict__.items():
            out[k] = None if isinstance(v, float) and not math.isfinite(v) else v
        return out


@dataclass(frozen=True)
class ItemDiff:
    """An item on which two runs differ, with both runs' texts."""

    run_a: str
    run_b: str
    item: str
    score: float
    detail: str
    text_a: str
    text_b: str


@dataclass(frozen=True)
class RankRow:
    """One run's place in a tie-aware ranking of one statistic and scope."""

    statistic: str
    scope: str
    run: str
    value: float
    letters: str


@dataclass(frozen=True)
class Comparison:
    """Everything a comparison found.

    Attributes:
        instrument: adapter name.
        runs: run names in the order given.
        labels: run → display label.
        rows: the paired table (BH over every row of it).
        matchings: per pair of runs, which items were shared and which were not.
        ranking: tie-aware letters per statistic and scope (three or more runs).
        items: the most different items per pair (both texts).
        simulated: whether any run is simulated.
        options: the settings used.
        headline: what the instrument's headline quantity is.
        margin_note: where the equivalence margin came from.
    """

    instrument: str
    runs: tuple[str, ...]
    labels: Mapping[str, str]
    rows: tuple[StatRow, ...]
    matchings: tuple[Matching, ...]
    ranking: tuple[RankRow, ...]
    items: tuple[ItemDiff, ...]
    simulated: bool
    options: CompareOptions
    headline: str
    margin_note: str

    def table(self) -> pd.DataFrame:
        """The paired table as a frame (one row per :class:`StatRow`)."""
        cols = list(StatRow.__dataclass_fields__)
        return pd.DataFrame([r.__dict__ for r in self.rows], columns=cols)

    def items_table(self) -> pd.DataFrame:
        """The most different items as a frame."""
        cols = list(ItemDiff.__dataclass_fields__)
        return pd.DataFrame([i.__dict__ for i in self.items], columns=cols)

    def to_dict(self) -> dict[str, Any]:
        """The comparison as JSON-safe data (what ``--json`` writes)."""
        return {
            "instrument": self.instrument,
            "headline": self.headline,
            "simulated": self.simulated,
            "runs": list(self.runs),
            "labels": dict(self.labels),
            "options": {k: _safe(v) for k, v in self.options.__dict__.items()},
            "margin_note": self.margin_note,
            # ``--margin mdd`` is NaN, which JSON writes as null like the default's None.
            "margin_mdd": self.options.margin is not None and math.isnan(self.options.margin),
            "matching": [
                m.__dict__ | {"only_a": list(m.only_a), "only_b": list(m.only_b)}
                for m in self.matchings
            ],
            "rows": [r.to_dict() for r in self.rows],
            "ranking": [r.__dict__ | {"value": _safe(r.value)} for r in self.ranking],
            "items": [{k: _safe(v) for k, v in i.__dict__.items()} for i in self.items],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """The comparison :meth:`to_dict` wrote (a page reads a job's ``--json`` back).

        ``None`` numbers come back as NaN; a margin of ``None`` stays the default.
        """
        opts = dict(data["options"])
        if opts.get("margin") is None and data.get("margin_mdd"):
            opts["margin"] = math.nan
        return cls(
            instrument=str(data["instrument"]),
            runs=tuple(data["runs"]),
            labels=dict(data["labels"]),
            rows=tuple(StatRow(**_nan(r)) for r in data["rows"]),
            matchings=tuple(
                Matching(**(m | {"only_a": tuple(m["only_a"]), "only_b": tuple(m["only_b"])}))
                for m in data["matching"]
            ),
            ranking=tuple(RankRow(**_nan(r)) for r in data["ranking"]),
            items=tuple(ItemDiff(**_nan(i)) for i in data["items"]),
            simulated=bool(data["simulated"]),
            options=CompareOptions(**opts),
            headline=str(data["headline"]),
            margin_note=str(data["margin_note"]),
        )


_FLOAT_FIELDS = frozenset(
    name
    for klass in (StatRow, RankRow, ItemDiff)
    for name, f in klass.__dataclass_fields__.items()
    if f.type in ("float", float)
)


def _nan(record: Mapping[str, Any]) -> dict[str, Any]:
    # to_dict wrote NaN as null (JSON has no NaN); a float field gets it back.
    return {k: math.nan if v is None and k in _FLOAT_FIELDS else v for k, v in record.items()}


def _safe(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v
