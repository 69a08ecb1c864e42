"""Source-reliance statistics on a plain probe table (``driftlens sources stats``).

The table has one row per probe answer::

    model, dataset, tier, ordering, question_id, variant, choice, correct_choice, wrong_choice
    [, p_correct, p_wrong, p_other]

``variant`` is one of the 13 probe variants (``bare``, ``u+`` ... ``d-u-``); a ``+`` assertion
states ``correct_choice``, a ``-`` one the fixed ``wrong_choice``. ``ordering`` is
``user_first`` / ``doc_first`` on double-source rows and empty on bare and single-source rows
(those rows enter both orderings' regressions). A bare row with an empty ``tier`` is shared by
every tier of its model and dataset. ``choice`` is the letter answered (``unknown`` when none
was found: it matches nothing). The optional ``p_*`` columns are the answer distribution
remapped to (correct, the fixed wrong answer, any other); with them the KL and ΔNLL columns
are computed.

The stored-run analysis writes this very table and calls :func:`analyze_sources_table`, so
the CLI on a CSV and the app on a run give the same numbers. Statistics come from
:mod:`driftlens_core.source_reliance`; this module only validates, groups and assembles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from driftlens_core.bootstrap import as_generator
from driftlens_core.calibration import equivalence_bound
from driftlens_core.source_discrimination import choice_counts, discrimination
from driftlens_core.source_reliance import (
    BEHAVIOUR_TYPES,
    INTERACTIONS,
    SCENARIOS,
    VARIANTS,
    InfluenceAverage,
    ShareDifference,
    SourceInfluence,
    average_influence,
    delta_nll_bits,
    interaction,
    kl_bits,
    mean_ci,
    parse_variant,
    share_difference,
    source_influence,
)
from storage.errors import InputError
from study.assessable import Usable
from study.sources.table import (
    INSTRUCTION_COLUMN,
    INSTRUCTIONS,
    PROB_COLUMNS,
    validate,
)

#: Default bootstrap replicates (the percentile intervals and the type shares).
DEFAULT_BOOTSTRAP = 2000


@dataclass(frozen=True)
class SourceCell:
    """The results for one model on one dataset (see :meth:`to_dict` for the JSON shape)."""

    model: str
    dataset: str
    payload: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this (model, dataset)."""
        return dict(self.payload)


@dataclass(frozen=True)
class SourcesStats:
    """All cells of a probe table, plus run metadata."""

    cells: tuple[SourceCell, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``{"meta": ..., "models": {MODEL: {DATASET: cell}}}``."""
        models: dict[str, dict[str, Any]] = {}
        for c in self.cells:
            models.setdefault(c.model, {})[c.dataset] = c.to_dict()
        return {"meta": dict(self.meta), "models": models}


def _clean(x: float | None) -> float | None:
    """JSON has no NaN: undefined values become ``null``."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return float(x)


Regression = tuple[str, str, SourceInfluence | None, SourceInfluence | None, str | None]


def _regressions(g: pd.DataFrame) -> list[Regression]:
    """Fit one regression per tier × ordering (with and without the bare rows)."""
    probes = g[g["variant"] != "bare"]
    tiers = sorted(set(probes["tier"])) or [""]
    out: list[Regression] = []
    for tier in tiers:
        in_tier = probes[probes["tier"] == tier]
        orderings = sorted(o for o in set(in_tier["ordering"]) if o) or [""]
        # one bare row per question of the tier (its own or the shared one)
        bare = in_tier.drop_duplicates("question_id").assign(
            correct=lambda d: d["bare_correct"],
            user_present=0,
            user_correct=0,
            doc_present=0,
            doc_correct=0,
        )
        for ordering in orderings:
            sel = in_tier[(in_tier["ordering"] == "") | (in_tier["ordering"] == ordering)]
            rows = pd.concat([bare, sel], ignore_index=True)
            cols = {
                "correct": rows["correct"].to_numpy(),
                "parametric": rows["bare_correct"].to_numpy(),
                "user_present": rows["user_present"].to_numpy(),
                "user_correct": rows["user_correct"].to_numpy(),
                "doc_present": rows["doc_present"].to_numpy(),
                "doc_correct": rows["doc_correct"].to_numpy(),
            }
            clusters = rows["question_id"].to_numpy()
            try:
                with_bare = source_influence(**cols, clusters=clusters)
                without = source_influence(**cols, clusters=clusters, include_bare=False)
                out.append((tier, ordering, with_bare, without, None))
            except (ValueError, np.linalg.LinAlgError) as exc:
                out.append((tier, ordering, None, None, str(exc)))
    return out


def _variant_table(g: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """The 13-variant table: n, accuracy, and what was chosen."""
    table: dict[str, dict[str, Any]] = {}
    for v in VARIANTS:
        rows = g[g["variant"] == v]
        if rows.empty:
            continue
        spec = parse_variant(v)
        # "the asserted answer" is one answer only for single and agreeing sources
        agree = v != "bare" and (spec.user is None or spec.doc is None or spec.user == spec.doc)
        unknown = float((rows["choice"].str.lower() == "unknown").mean())
        read = rows[rows["choice"].str.lower() != "unknown"]  # unscored rows estimate nothing
        table[v] = {
            "n": len(rows),
            "accuracy": float(read["correct"].mean()) if len(read) else None,
            "chose_wrong": float((read["choice"] == read["wrong_choice"]).mean())
            if len(read)
            else None,
            "chose_asserted": (
                float((read["choice"] == read["asserted"]).mean()) if agree and len(read) else None
            ),
            "unknown": unknown,
        }
    return table


def _per_question(values: np.ndarray, q: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((n, 2))
    np.add.at(out[:, 0], q, values)
    np.add.at(out[:, 1], q, 1.0)
    return out


def _distribution(
    g: pd.DataFrame, qindex: dict[str, int], rng: np.random.Generator, n_boot: int
) -> dict[str, Any]:
    """KL and ΔNLL vs bare per variant, by scenario, and the interaction terms."""
    probes = g[g["variant"] != "bare"]
    p = probes[list(PROB_COLUMNS)].to_numpy(dtype=np.float64)
    base = probes[[f"bare_{c}" for c in PROB_COLUMNS]].to_numpy(dtype=np.float64)
    ok = ~np.isnan(p).any(axis=1) & ~np.isnan(base).any(axis=1)
    if not ok.any():
        return {"available": False}
    probes = probes[ok].assign(kl=kl_bits(p[ok], base[ok]), dnll=delta_nll_bits(p[ok], base[ok]))
    kl_mean: dict[str, float | None] = {}
    dnll_mean: dict[str, float | None] = {}
    kl_ci: dict[str, list[float | None]] = {}
    for v in VARIANTS[1:]:
        rows = probes[probes["variant"] == v]
        if rows.empty:
            continue
        kl_mean[v] = _clean(float(rows["kl"].mean()))
        dnll_mean[v] = _clean(float(rows["dnll"].mean()))
        q = rows["question_id"].map(qindex).to_numpy(dtype=np.int64)
        _, lo, hi = mean_ci(
            _per_question(rows["kl"].to_numpy(), q, len(qindex)), n_boot=n_boot, seed=rng
        )
        kl_ci[v] = [_clean(lo), _clean(hi)]
    scenarios: dict[str, Any] = {}
    for name, vs in SCENARIOS.items():
        rows = probes[probes["variant"].isin(vs)]
        if rows.empty:
            continue
        slope = r = None
        if len(rows) > 2 and rows["kl"].std() > 0 and rows["dnll"].std() > 0:
            slope = float(np.polyfit(rows["kl"], rows["dnll"], 1)[0])
            r = float(np.corrcoef(rows["kl"], rows["dnll"])[0, 1])
        scenarios[name] = {
            "n": len(rows),
            "kl": _clean(float(rows["kl"].mean())),
            "delta_nll": _clean(float(rows["dnll"].mean())),
            "slope": _clean(slope),
            "r": _clean(r),
        }
    inter: dict[str, float | None] = {}
    for name, (doubles, s1, s2) in INTERACTIONS.items():
        got = [kl_mean.get(v) for v in (*doubles, s1, s2)]
        if any(x is None for x in got):
            continue
        vals = [float(x) for x in got if x is not None]
        inter[name] = _clean(float(interaction(np.mean(vals[:-2]), vals[-2], vals[-1])))
    return {
        "available": True,
        "n": int(ok.sum()),
        "n_missing": int((~ok).sum()),
        "kl": kl_mean,
        "kl_ci": kl_ci,
        "delta_nll": dnll_mean,
        "scenarios": scenarios,
        "interaction": inter,
    }


def _interval(d: ShareDifference, level: float) -> list[float | None]:
    lo, hi = d.intervals[level]
    return [_clean(lo), _clean(hi)]


def _paired_sums(
    g: pd.DataFrame,
    a: np.ndarray,
    b: np.ndarray,
    in_a: np.ndarray,
    in_b: np.ndarray,
    qindex: dict[str, int],
) -> np.ndarray:
    """``(Q, 4)`` per-question ``Σa, n_a, Σb, n_b`` over the rows flagged ``in_a`` / ``in_b``."""
    q = g["question_id"].map(qindex).to_numpy(dtype=np.int64)
    out = np.zeros((len(qindex), 4))
    np.add.at(out[:, 0], q[in_a], a[in_a])
    np.add.at(out[:, 1], q[in_a], 1.0)
    np.add.at(out[:, 2], q[in_b], b[in_b])
    np.add.at(out[:, 3], q[in_b], 1.0)
    return out


def _source_effect(
    g: pd.DataFrame, qindex: dict[str, int], rng: np.random.Generator, n_boot: int
) -> dict[str, Any]:
    """Whether assertions move answers at all, with an equivalence bound when they do not.

    The *adoption shift* of a source is, over its single-source probes, the share answering
    the asserted option minus the share whose bare answer already was that option. A model
    that ignores assertions has a shift of 0 for both sources; then the 90% intervals give
    the equivalence bound (:func:`driftlens_core.calibration.equivalence_bound`): the
    largest shift the data still allow.

    An effect is *detected* when a 95% interval lies above 0: answers move toward what a
    source asserts. A shift below 0 (answers leaving an option an assertion agrees with,
    the simulator's "flip" noise) is no reliance on the source; it is reported in the
    shifts and widens the bound, but is not called a source effect.
    """
    shifts: dict[str, Any] = {}
    bounds = []
    detected = False
    for source, letter in (("user", "u"), ("doc", "d")):
        rows = g[g["variant"].isin([f"{letter}+", f"{letter}-"])]
        if rows.empty:
            continue
        probe = (rows["choice"] == rows["asserted"]).to_numpy(dtype=np.float64)
        base = (rows["bare_choice"] == rows["asserted"]).to_numpy(dtype=np.float64)
        every = np.ones(len(rows), dtype=bool)
        d = share_difference(
            _paired_sums(rows, base, probe, every, every, qindex), n_boot=n_boot, seed=rng
        )
        ci90 = d.intervals[0.90]
        bounds.append(float(equivalence_bound(ci90[0], ci90[1])))
        detected = detected or d.intervals[0.95][0] > 0
        shifts[source] = {
            "shift": _clean(d.estimate),
            "bare_share": _clean(d.share_a),
            "probe_share": _clean(d.share_b),
            "ci95": _interval(d, 0.95),
            "ci90": _interval(d, 0.90),
        }
    if not shifts:
        return {"available": False}
    bound = max(bounds)
    if detected:
        statement = "source effect detected: " + "; ".join(
            f"{s} adoption shift {_f(v['shift'])} (95% CI {_f(v['ci95'][0])} to {_f(v['ci95'][1])})"
            for s, v in shifts.items()
        )
    else:
        statement = (
            "no detectable source effect: no 95% interval of the adoption shift lies above 0, "
            f"and the 90% intervals bound the shift within ±{bound:.3f}"
        )
    return {
        "available": True,
        "detected": detected,
        "equivalence_bound": _clean(bound),
        "adoption_shift": shifts,
        "statement": statement,
    }


def _order_conflict(
    g: pd.DataFrame, qindex: dict[str, int], rng: np.random.Generator, n_boot: int
) -> dict[str, Any]:
    """The order effect on conflicting assertions, with its own bootstrap interval.

    On the conflict probes (one source asserts the correct option, the other the wrong
    one), the share answering with the *user's* option, user first (``u+d-``, ``u-d+``)
    against document first (``d+u-``, ``d-u+``: the user nearer the question). The
    difference (document first − user first) is 0 without an order effect and positive
    when the source nearer the question weighs more.
    """
    conflict = g[g["variant"].isin(["u+d-", "u-d+", "d+u-", "d-u+"])]
    if conflict.empty:
        return {"available": False}
    user_ok = conflict["variant"].str.contains("u+", regex=False)
    user_option = np.where(user_ok, conflict["correct_choice"], conflict["wrong_choice"])
    follows = (conflict["choice"].to_numpy() == user_option).astype(np.float64)
    first = (conflict["ordering"] == "user_first").to_numpy()
    d = share_difference(
        _paired_sums(conflict, follows, follows, first, ~first, qindex), n_boot=n_boot, seed=rng
    )
    if not math.isfinite(d.estimate):
        return {"available": False}
    return {
        "available": True,
        "measure": "share of conflict probes answered with the user's option",
        "user_first": _clean(d.share_a),
        "doc_first": _clean(d.share_b),
        "difference": _clean(d.estimate),
        "ci95": _interval(d, 0.95),
        "ci90": _interval(d, 0.90),
        "detected": not d.covers_zero(0.95),
        "n_questions": d.n_clusters,
    }


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:+.3f}"  # a signed shift, three decimals


def _influence_dict(avg: InfluenceAverage | None) -> dict[str, Any]:
    return {
        "odds_ratios": {
            "parametric": _clean(avg.or_parametric) if avg else None,
            "user": _clean(avg.or_user) if avg else None,
            "doc": _clean(avg.or_doc) if avg else None,
        },
        "self_pct": _clean(avg.self_pct) if avg else None,
        "user_pct": _clean(avg.user_pct) if avg else None,
        "doc_pct": _clean(avg.doc_pct) if avg else None,
        "u_over_d": _clean(avg.u_over_d) if avg else None,
    }


def _read(g: pd.DataFrame) -> pd.Series:
    """The rows whose letter was read, on the probe and on its bare answer (an unknown
    letter is unscored: it is counted, never read as a wrong answer)."""
    ok = g["choice"].astype(str).str.lower() != "unknown"
    if "bare_choice" in g.columns:
        ok &= g["bare_choice"].astype(str).str.lower() != "unknown"
    return ok


def _cell(g: pd.DataFrame, rng: np.random.Generator, n_boot: int) -> dict[str, Any]:
    everything = g
    read = int((g["choice"].str.lower() != "unknown").sum())
    usable = Usable(read, len(g), "probes letter-read")
    kept = _read(g)
    if kept.any():  # with nothing read the cell is withdrawn below (usable 0 of N)
        g = g[kept]
    qids = sorted(set(g["question_id"]))
    qindex = {q: i for i, q in enumerate(qids)}

    regs = _regressions(g)
    fitted = [(o, w, nb) for _, o, w, nb, _ in regs if w is not None and nb is not None]
    avg = average_influence([w for _, w, _ in fitted]) if fitted else None
    avg_nb = average_influence([nb for _, _, nb in fitted]) if fitted else None

    counts: dict[str, np.ndarray] = {}
    for source, letter in (("user", "u"), ("doc", "d")):
        rows = g[g["variant"].isin([f"{letter}+", f"{letter}-"])]
        counts[source] = choice_counts(
            rows["question_id"].map(qindex).to_numpy(dtype=np.int64),
            rows["bare_choice"].to_numpy(),
            rows["choice"].to_numpy(),
            rows["correct_choice"].to_numpy(),
            rows["asserted"].to_numpy(),
            n_questions=len(qids),
        )
    by = discrimination(counts, n_boot=n_boot, seed=rng).by_source

    def per_source(key: str) -> dict[str, float | None]:
        return {s: _clean(by[s].rates[key]) for s in by}

    order_effect: dict[str, Any] = {}
    for ordering in sorted({o for o, _, _ in fitted}):
        a = average_influence([w for o, w, _ in fitted if o == ordering])
        order_effect[ordering or "none"] = {
            **_influence_dict(a),
            "n_regressions": a.n_regressions,
        }
    dist = _distribution(g, qindex, rng, n_boot)
    source_effect = _source_effect(g, qindex, rng, n_boot)
    order_conflict = _order_conflict(g, qindex, rng, n_boot)
    bare = g[g["variant"] == "bare"]
    cell = {
        "usable": usable.to_dict(),
        # parse failures: counted and shown, left out of every estimate of the cell
        "unscored": {"unscored": len(everything) - read, "probes": len(everything)},
        "n_questions": len(qids),
        "bare_accuracy": float(bare["correct"].mean()),
        "par_plus": per_source("par_plus"),
        "sdr_plus": per_source("sdr_plus"),
        "par_minus": per_source("par_minus"),
        "sdr_minus": per_source("sdr_minus"),
        "neither_model_correct": per_source("neither_model_correct"),
        "neither_model_wrong": per_source("neither_model_wrong"),
        "rate_ci": {
            s: {k: [_clean(lo), _clean(hi)] for k, (lo, hi) in by[s].ci.items()} for s in by
        },
        "rate_n": {
            s: {"model_correct": by[s].n_model_correct, "model_wrong": by[s].n_model_wrong}
            for s in by
        },
        "behaviour": {
            s: {
                "type": by[s].behaviour,
                "share": {t: _clean(by[s].type_share[t]) for t in BEHAVIOUR_TYPES},
                "valid_fraction": by[s].valid_fraction,
            }
            for s in by
        },
        **_influence_dict(avg),
        # the documented variant: the same regressions without the bare rows
        "without_bare": _influence_dict(avg_nb) if avg_nb else None,
        "separation": bool(avg.any_separation) if avg else None,
        "regressions": [
            {"tier": t, "ordering": o, **(w.to_dict() if w else {}), "error": err}
            for t, o, w, _, err in regs
        ],
        "order_effect": order_effect,
        # the order effect on conflicts, with its question-bootstrap interval
        "order_conflict": order_conflict,
        # whether assertions move answers at all (the null check, equivalence bound)
        "source_effect": source_effect,
        "kl": dist.get("kl", {}),
        "delta_nll": dist.get("delta_nll", {}),
        "distribution": dist,
        "variants": _variant_table(everything),
    }
    return cell if usable.assessable else _not_assessable(cell, usable)


def _not_assessable(cell: dict[str, Any], usable: Usable) -> dict[str, Any]:
    """The cell with every conclusion withdrawn (the shares and tables stay for reading)."""
    out = dict(cell)
    out["source_effect"] = {"available": False, "statement": usable.sentence}
    out["order_conflict"] = {"available": False}
    out["separation"] = None
    out["behaviour"] = {
        s: {**b, "type": None, "share": dict.fromkeys(b["share"])}
        for s, b in cell["behaviour"].items()
    }
    return out


def _instruction_summary(cell: Mapping[str, Any]) -> dict[str, Any]:
    """The headline numbers of one instruction variant (the instruction-effect table)."""
    return {
        "bare_accuracy": cell["bare_accuracy"],
        "par_plus": cell["par_plus"],
        "sdr_plus": cell["sdr_plus"],
        "behaviour": {s: cell["behaviour"][s]["type"] for s in cell["behaviour"]},
        "self_pct": cell["self_pct"],
        "user_pct": cell["user_pct"],
        "doc_pct": cell["doc_pct"],
        "u_over_d": cell["u_over_d"],
    }


def analyze_sources_table(
    df: pd.DataFrame,
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int | None = None,
    source: str = "the table",
) -> SourcesStats:
    """Validate a probe table and compute every (model, dataset) cell.

    Args:
        df: The table (text columns as read by :func:`read_sources_csv`).
        bootstrap: Bootstrap replicates for the intervals and type shares.
        seed: Seed (the same seed gives the same intervals and shares).
        source: How errors name the table (usually its path).

    Raises:
        InputError: the table is invalid (one sentence naming the line).
    """
    if bootstrap < 1:
        raise InputError("--bootstrap must be at least 1.")
    clean = validate(df, source=source)
    rng = as_generator(seed)
    cells = []
    for (m, d), g in clean.groupby(["model", "dataset"], sort=True):
        # the main results are the neutral instruction's; other instructions are compared
        present = [i for i in INSTRUCTIONS if (g[INSTRUCTION_COLUMN] == i).any()]
        main = "n" if "n" in present else present[0]
        payload = _cell(g[g[INSTRUCTION_COLUMN] == main], rng, bootstrap)
        payload["instruction"] = main
        if len(present) > 1:
            payload["instruction_effect"] = {
                i: _instruction_summary(
                    payload if i == main else _cell(g[g[INSTRUCTION_COLUMN] == i], rng, bootstrap)
                )
                for i in present
            }
        cells.append(SourceCell(str(m), str(d), payload))
    meta = {
        "version": 1,
        "bootstrap": bootstrap,
        "seed": seed,
        "rows": len(clean),
        "threshold": 0.5,
        "kl_eps": 1e-9,
        "note": (
            "odds ratios, Self%, U%, D% and U%/D% are arithmetic means over the tier x "
            "ordering regressions; 'without_bare' refits them without the bare rows"
        ),
    }
    return SourcesStats(cells=tuple(cells), meta=meta)
