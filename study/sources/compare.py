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

The source odds ratios (ParametricOR, UserOR, DocOR, on the log scale) come from one joint
logit of both runs on the shared questions, tiers and orderings pooled, with run B's
columns as differences and question-clustered SEs (:func:`odds_ratio_rows`); their margin
is each row's MDD (the log-OR scale has no percentage-point bound).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlmodel import Session

from llm.specs import spec_simulated
from storage.errors import InputError
from storage.source_models import SourceClaim, SourceProbe, SourceRun
from study.compare.measures import MeasureAdapter, stat_row
from study.compare.registry import register_adapter
from study.compare.types import CompareOptions, Kind, RunData, StatRow

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


def _logit_rows(table: pd.DataFrame, items: set[str]) -> pd.DataFrame:
    """The source-influence logit's rows of one run on ``items``, tiers and orderings pooled.

    Every probe with a source, plus one bare row per question and tier (as the per-tier
    regressions of :mod:`study.sources.analysis` build them).
    """
    t = table.assign(item=table["dataset"] + "/" + table["question_id"])
    t = t[t["item"].isin(items)]
    probes = t[t["variant"] != "bare"]
    bare = probes.drop_duplicates(["item", "tier"]).assign(
        correct=lambda d: d["bare_correct"], user_present=0, user_correct=0, doc_present=0,
        doc_correct=0,
    )  # fmt: skip
    return pd.concat([bare, probes], ignore_index=True)


def odds_ratio_rows(
    a: RunData, b: RunData, shared: Sequence[str], *, options: CompareOptions
) -> list[StatRow]:
    """log ParametricOR / UserOR / DocOR of both runs from one joint, question-clustered fit.

    The design is the source-influence logit's with every column repeated for run B, so run
    B's coefficients are A's plus a difference whose cluster-robust SE (questions shared by
    both runs as clusters) carries the pairing.
    """
    from driftlens_core.logistic import fit_logit
    from driftlens_core.paired import wald_difference
    from driftlens_core.source_reliance import influence_design

    items = set(shared)
    parts = []
    for k, run in enumerate((a, b)):
        rows = _logit_rows(run.extra, items)
        x = influence_design(rows["bare_correct"], rows["user_present"], rows["user_correct"],
                             rows["doc_present"], rows["doc_correct"])  # fmt: skip
        parts.append((np.hstack([x, x * k]), rows["correct"].to_numpy(float), rows["item"]))
    x = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    clusters = np.concatenate([p[2].to_numpy() for p in parts])
    try:
        fit = fit_logit(x, y, clusters=clusters)
    except (ValueError, np.linalg.LinAlgError):
        return []  # separation or too few probes: the rates above still stand
    coef, cov = fit.coef, fit.cov
    terms = {"parametric": [1], "user": [2, 3], "doc": [4, 5]}
    base = np.array([coef[t].sum() for t in terms.values()])
    delta = np.array([coef[[i + 6 for i in t]].sum() for t in terms.values()])
    se = np.array([
        np.sqrt(max(float(cov[np.ix_([i + 6 for i in t], [i + 6 for i in t])].sum()), 0.0))
        for t in terms.values()
    ])  # fmt: skip
    n = len({c for c in clusters})
    res = wald_difference(base, base + delta, se, n, alpha=options.alpha, margin="mdd")
    out = []
    for j, name in enumerate(terms):
        out.append(
            stat_row(
                a,
                b,
                "log odds ratio",
                name,
                "logit",
                res,
                j,
                test="Wald (question-clustered)",
                p_test=float(res.p_value[j]),
                detail=f"OR {np.exp(base[j]):.3g} → {np.exp(base[j] + delta[j]):.3g}; "
                "tiers and orderings pooled",
            )
        )
    return out


class SourcesAdapter(MeasureAdapter):
    """PAR+/SDR−/SDR+/PAR− per source, paired on question, tier, ordering and instruction."""

    name = "sources"
    headline = "PAR/SDR per source (keeping the own answer vs adopting the asserted one)"
    revision_tables: tuple[type, ...] = (SourceRun, SourceProbe, SourceClaim)
    #: 5 percentage points, the bound disposition uses for its rates too
    default_margin: float | None = 0.05

    def list_runs(self, *, session: Session) -> list[str]:
        """The stored source-reliance runs."""
        from storage.repo.sources import list_source_runs

        return sorted({r.name for r in list_source_runs(session=session)})

    def load(self, run: str, *, session: Session, options: CompareOptions) -> RunData:
        """The run's single-source probes as a measurement table."""
        from study.sources.store import stored_run_table
        from study.sources.table import validate

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
            simulated=spec_simulated(models[0]),
            measures=measures,
            kinds=kinds,
            texts=_texts(table),
            extra=table,
        )

    def pair(
        self,
        a: RunData,
        b: RunData,
        shared: Sequence[str],
        *,
        options: CompareOptions,
        margin: float | None,
    ) -> list[StatRow]:
        """PAR/SDR rows (paired bootstrap, McNemar) and the three source odds ratios."""
        rows = super().pair(a, b, shared, options=options, margin=margin)
        return rows + odds_ratio_rows(a, b, shared, options=options)


ADAPTER = register_adapter(SourcesAdapter())
