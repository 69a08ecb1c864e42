"""Source reliance in ``driftlens compare``: PAR/SDR per source of two runs.

The measurements are the single-source probes of a run's probe table (``u+``, ``u-``, ``d+``,
``d-``) read against the run's own bare answer, as the discrimination rates define them:

* ``PAR+`` / ``SDR-`` — bare answer correct, the source asserts the wrong answer: 1 when the
  model keeps its answer / adopts the wrong assertion;
* ``SDR+`` / ``PAR-`` — bare answer wrong, the source asserts the correct answer: 1 when the
  model adopts it / keeps its own wrong answer.

Item = dataset and question, unit = tier, ordering and instruction, scope = the source.
Because the condition (bare answer right or wrong) is each run's own, a rate is compared on
the questions where *both* runs qualify (both bare answers correct for PAR+, both wrong for
SDR+); the others are left out of that rate, never moved between runs. The outcomes are
0/1, so the paired test is exact McNemar on the paired probes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlmodel import Session

from storage.errors import InputError
from study.compare.measures import MeasureAdapter
from study.compare.registry import register_adapter
from study.compare.types import CompareOptions, Kind, RunData

SOURCE_OF = {"u": "user", "d": "doc"}
STATISTICS: tuple[str, ...] = ("PAR+", "SDR-", "SDR+", "PAR-")


def discrimination_measures(table: pd.DataFrame) -> pd.DataFrame:
    """The PAR/SDR outcomes of a validated probe table (one row per probe and statistic)."""
    single = table[table["variant"].isin(["u+", "u-", "d+", "d-"])]
    src = single["variant"].str[0].map(SOURCE_OF)
    positive = single["variant"].str[1] == "+"
    own_right = single["bare_correct"].astype(int) == 1
    kept = (single["choice"] == single["bare_choice"]).astype(float)
    adopted = (single["choice"] == single["asserted"]).astype(float)
    base = pd.DataFrame(
        {
            "item": single["dataset"] + "/" + single["question_id"],
            "unit": single["tier"] + "/" + single["ordering"] + "/" + single["instruction"],
            "scope": src,
        }
    )
    parts = []
    for stat, mask, value in (
        ("PAR+", own_right & ~positive, kept),
        ("SDR-", own_right & ~positive, adopted),
        ("SDR+", ~own_right & positive, adopted),
        ("PAR-", ~own_right & positive, kept),
    ):
        parts.append(base[mask.to_numpy()].assign(statistic=stat, value=value[mask].to_numpy()))
    return pd.concat(parts, ignore_index=True)[["item", "unit", "statistic", "scope", "value"]]


def _texts(table: pd.DataFrame) -> dict[str, str]:
    """Per probe: the chosen letter against the bare, correct and asserted ones (+ p)."""
    out: dict[str, str] = {}
    single = table[table["variant"].isin(["u+", "u-", "d+", "d-"])]
    for r in single.to_dict("records"):
        item = f"{r['dataset']}/{r['question_id']}"
        unit = f"{r['tier']}/{r['ordering']}/{r['instruction']}"
        probs = ""
        if np.isfinite(r.get("p_correct", np.nan)):
            probs = (f"; P(correct) {r['p_correct']:.2f}, P(asserted wrong) {r['p_wrong']:.2f}, "
                     f"P(other) {r['p_other']:.2f}")  # fmt: skip
        text = (
            f"[{r['variant']}] chose {r['choice']} (bare {r['bare_choice']}, correct "
            f"{r['correct_choice']}, asserted {r['asserted']}){probs}"
        )
        scope = SOURCE_OF[str(r["variant"])[0]]
        out[f"{item}|{scope}|{unit}"] = text
        out.setdefault(item, text)
    return out


class SourcesAdapter(MeasureAdapter):
    """PAR+/SDR−/SDR+/PAR− per source, paired on question, tier, ordering and instruction."""

    name = "sources"
    headline = "PAR/SDR per source (keeping the own answer vs adopting the asserted one)"
    #: 5 percentage points, the bound disposition uses for its rates too
    default_margin: float | None = 0.05

    def list_runs(self, *, session: Session) -> list[str]:
        """The stored source-reliance runs."""
        from storage.repo.sources import list_source_runs

        return sorted({r.name for r in list_source_runs(session=session)})

    def load(self, run: str, *, session: Session, options: CompareOptions) -> RunData:
        """The run's single-source probes as a measurement table."""
        from study.sources.analysis import validate
        from study.sources.store import stored_run_table

        table = validate(stored_run_table(run, session=session), source=f"run {run!r}")
        models = sorted(set(table["model"]))
        if len(models) != 1:
            raise InputError(
                f"Run {run!r} holds {len(models)} models ({', '.join(models)}); compare runs "
                "of one model each."
            )
        measures = discrimination_measures(table)
        if measures.empty:
            raise InputError(f"Run {run!r} has no single-source probe answered yet.")
        kinds: dict[str, Kind] = dict.fromkeys(STATISTICS, "binary")
        return RunData(
            name=run,
            label=f"{models[0]} [{run}]",
            simulated=models[0].startswith("sim/") or "/sim/" in models[0],
            measures=measures,
            kinds=kinds,
            texts=_texts(table),
        )


ADAPTER = register_adapter(SourcesAdapter())
