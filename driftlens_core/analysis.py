"""The statistics of a drift study, from a long table to typed results (SPEC §7, §8).

Input: one row per (model, question, condition[, sample]) drift measurement with a
``condition_class`` per condition: ``none`` (baseline vs. resampled baseline, the null
distribution and the mixed model's reference), ``noise`` (pragmatic noise, pooled into the
floor), ``attribute``, ``life_event`` or ``other``. Per model and metric
:func:`analyze_table` computes

* the noise floor (μ_noise, σ_noise over all noise rows),
* per condition: rows, mean, d_rel with a cluster-bootstrap percentile CI and p-value
  (:mod:`driftlens_core.bootstrap`), BH-adjusted p over every condition that is not of class
  ``none`` (noise conditions included: each is a test of the floor), Cohen's d against the
  ``none`` rows, the compact letter display of pairwise Welch tests on question means,
  the minimum detectable d_rel (t-based, from the raw difference's SE in noise-SD units:
  :func:`~driftlens_core.calibration.minimum_detectable_drel`)
  and, when nothing is detected, the equivalence bound from the 90% CI;
* the random-intercept mixed model (reference: the ``none`` condition, else the first noise
  condition, which is flagged);
* the null test (two samples per condition) and the noise decomposition;
* specificity, sensitivity and (per model) convergent validity.

All metrics of a model share one set of bootstrap resamples (the same questions are drawn
for DTW and SRI), so their intervals are jointly valid. Independent models use independent
child generators spawned from the one seed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from driftlens_core._impl import implementation
from driftlens_core.bootstrap import (
    DEFAULT_BOOTSTRAP,
    Seed,
    as_generator,
    bootstrap_flags,
    drel_bootstrap,
)
from driftlens_core.calibration import (
    NoiseDecomposition,
    NullTest,
    equivalence_bound,
    minimum_detectable,
    minimum_detectable_drel,
)
from driftlens_core.effects import bh_adjust, separability
from driftlens_core.mixed_model import MixedModelResult, fit_random_intercept_sums
from driftlens_core.row_sums import (
    ModelRowSums,
    RowChunk,
    cohens_d_from_sums,
    noise_decomposition_from_sums,
    null_test_from_sums,
    reduce_rows,
)
from driftlens_core.stats_input import (
    StatsInput,
    json_number,
    stats_input_from_columns,
)
from driftlens_core.validity import (
    SPECIFICITY_MARGIN,
    MetricValidity,
    ModelValidity,
    convergent_validity,
    sensitivity,
    specificity,
)

#: Questions from which the reasoning-drift MDD delivers its power whatever the pilot:
#: at 8 questions two pilot draws gave 74.3 % and 80.2 % power at the MDD, at 30 78.7 %.
MDD_RELIABLE_QUESTIONS = 30


@dataclass(frozen=True)
class ConditionStats:
    """Everything reported for one condition and metric (see module docstring)."""

    name: str
    klass: str
    n: int
    n_questions: int
    mean: float
    d_rel: float
    ci_low: float
    ci_high: float
    p_value: float
    p_adjusted: float
    cohens_d: float
    letters: str
    mdd: float
    mdd_raw: float
    equivalence_bound: float
    flags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.klass,
            "n": self.n,
            "n_questions": self.n_questions,
            "mean": json_number(self.mean),
            "d_rel": json_number(self.d_rel),
            "ci_low": json_number(self.ci_low),
            "ci_high": json_number(self.ci_high),
            "p_value": json_number(self.p_value),
            "p_adjusted": json_number(self.p_adjusted),
            "cohens_d": json_number(self.cohens_d),
            "letters": self.letters,
            "mdd": json_number(self.mdd),
            "mdd_raw": json_number(self.mdd_raw),
            "equivalence_bound": json_number(self.equivalence_bound),
            "flags": list(self.flags),
        }


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, float | np.floating):
        return json_number(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


@dataclass(frozen=True)
class MetricStats:
    """Statistics of one metric for one model."""

    metric: str
    noise_mean: float
    noise_sd: float
    conditions: tuple[ConditionStats, ...]
    mixed_model: MixedModelResult | None
    mixed_model_error: str
    null_test: NullTest
    noise_decomposition: NoiseDecomposition | None
    validity: MetricValidity
    flags: tuple[str, ...] = ()

    def condition(self, name: str) -> ConditionStats:
        """Return the statistics of condition ``name``."""
        for c in self.conditions:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        mm: dict[str, Any] | None
        if self.mixed_model is not None:
            mm = _json_safe(self.mixed_model.to_dict())
        else:
            mm = {"error": self.mixed_model_error}
        return {
            "noise_floor": {"mean": json_number(self.noise_mean), "sd": json_number(self.noise_sd)},
            "conditions": {c.name: c.to_dict() for c in self.conditions},
            "mixed_model": mm,
            "null_test": _json_safe(self.null_test.to_dict()),
            "noise_decomposition": (
                _json_safe(self.noise_decomposition.to_dict())
                if self.noise_decomposition is not None
                else None
            ),
            "validity": self.validity.to_dict(),
            "flags": list(self.flags),
        }


@dataclass(frozen=True)
class ModelStats:
    """Statistics of one model: every metric plus the model's validity."""

    model: str
    metrics: tuple[MetricStats, ...]
    validity: ModelValidity

    def metric(self, name: str) -> MetricStats:
        for m in self.metrics:
            if m.metric == name:
                return m
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metrics": {m.metric: m.to_dict() for m in self.metrics},
            "convergent_validity": _json_safe(self.validity.convergent.to_dict()),
            "validity_passed": self.validity.passed,
        }


@dataclass(frozen=True)
class StudyStats:
    """The full statistics of a drift study (``driftlens stats`` output)."""

    models: tuple[ModelStats, ...]
    n_boot: int
    seed: int | None
    implementation: str
    margin: float = SPECIFICITY_MARGIN

    @classmethod
    def of(
        cls, models: Iterable[ModelStats], *, n_boot: int, seed: Seed, margin: float
    ) -> StudyStats:
        """The study's statistics from its models', stamped with this run's settings.

        Args:
            models: Each model's statistics, in the table's model order.
            n_boot: Bootstrap replicates used.
            seed: The seed given (recorded only when it is an integer).
            margin: The specificity check's equivalence margin.
        """
        return cls(
            models=tuple(models),
            n_boot=n_boot,
            seed=seed if isinstance(seed, int) else None,
            implementation=implementation(),
            margin=margin,
        )

    def model(self, name: str) -> ModelStats:
        for m in self.models:
            if m.model == name:
                return m
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN → ``None``) in the documented ``driftlens stats`` schema."""
        return {
            "models": {m.model: m.to_dict() for m in self.models},
            "meta": {
                "bootstrap": self.n_boot,
                "seed": self.seed,
                "implementation": self.implementation,
                "flags": list(bootstrap_flags(self.n_boot)),
                "specificity_margin": self.margin,
            },
        }


def _compact(codes: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Codes present in this model, renumbered ``0..K-1`` in order, in O(N) (no sort)."""
    present = np.bincount(codes) > 0
    index = np.cumsum(present) - 1
    return np.flatnonzero(present), index[codes]


def _analyze_model(
    inp: StatsInput,
    rows: NDArray[np.bool_] | slice,
    model_name: str,
    *,
    n_boot: int,
    rng: np.random.Generator,
    alpha: float,
    margin: float = SPECIFICITY_MARGIN,
) -> ModelStats:
    q_all = inp.question[rows]
    c_all = inp.condition[rows]
    x = inp.values[rows]
    samp = inp.sample[rows] if inp.sample is not None else None
    labs = inp.label_run[rows] if inp.label_run is not None and samp is not None else None
    # compact codes for this model
    q_keys, q = _compact(q_all)
    c_keys, c = _compact(c_all)
    names = tuple(inp.condition_names[k] for k in c_keys)
    classes = tuple(inp.condition_classes[k] for k in c_keys)
    n_q = q_keys.size
    noise = np.array([k == "noise" for k in classes])
    if not noise.any():
        raise ValueError(f"model {model_name!r} has no noise rows: the floor cannot be estimated")
    chunk = RowChunk(question=q, condition=c, values=x, sample=samp)
    sums = reduce_rows(
        lambda: (chunk,),
        n_questions=n_q,
        noise=noise,
        n_metrics=x.shape[1],
        labeled=labs is not None,
    )
    return _model_from_sums(
        sums,
        model_name,
        names=names,
        classes=classes,
        metrics=inp.metrics,
        sample_names=tuple(inp.sample_names),
        has_sample=samp is not None,
        n_boot=n_boot,
        rng=rng,
        alpha=alpha,
        margin=margin,
    )


def _model_from_sums(
    sums: ModelRowSums,
    model_name: str,
    *,
    names: tuple[str, ...],
    classes: tuple[str, ...],
    metrics: tuple[str, ...],
    sample_names: tuple[str, ...],
    has_sample: bool,
    n_boot: int,
    rng: np.random.Generator,
    alpha: float,
    margin: float,
) -> ModelStats:
    """One model's statistics from its row reductions (:mod:`driftlens_core.row_sums`)."""
    qs = sums.qs
    n_c = len(names)
    noise = qs.noise
    boot = drel_bootstrap(qs, n_boot=n_boot, seed=rng)
    n_rows = qs.n.sum(axis=0)
    n_quest = (qs.n > 0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = qs.sums.sum(axis=0) / n_rows[:, None] + qs.shift  # (C, M)
        q_means = qs.sums / qs.n[:, :, None] + qs.shift  # (Q, C, M)
    in_family = np.array([k != "none" and n_quest[j] >= 2 for j, k in enumerate(classes)])
    none_codes = [j for j, k in enumerate(classes) if k == "none"]
    ref = none_codes[0] if none_codes else int(np.flatnonzero(noise)[0])
    ref_flag = (
        ()
        if none_codes
        else (f"no 'none' condition: mixed-model reference is noise condition {names[ref]!r}",)
    )
    # questions informing each condition's test (as in drel_bootstrap's expanded interval)
    n_noise_q = int((qs.n[:, noise].sum(axis=1) > 0).sum())
    n_inform = np.minimum(n_quest, n_noise_q)
    sumsq = sums.sumsq
    none_arr = np.array(none_codes, dtype=np.int64)
    metric_results = []
    for m, metric in enumerate(metrics):
        p = boot.p_value[:, m].copy()
        p[n_quest < 2] = np.nan
        p_adj = np.full(n_c, np.nan)
        p_adj[in_family] = bh_adjust(p[in_family])
        sep = separability([q_means[qs.n[:, j] > 0, j, m] for j in range(n_c)], names, alpha=alpha)
        # the MDD of the test actually applied: t with n - 1 df, n the informing questions;
        # the d_rel test is the test of the raw difference (same sign in every replicate),
        # so its MDD is the raw MDD in noise-SD units (calibration.minimum_detectable_drel)
        mdd_raw = minimum_detectable(boot.diff_se[:, m], n_clusters=n_inform, alpha=alpha)
        mdd = minimum_detectable_drel(
            boot.diff_se[:, m], boot.noise_sd[m], n_clusters=n_inform, alpha=alpha
        )
        eq = equivalence_bound(boot.ci90_low[:, m], boot.ci90_high[:, m])
        conds = []
        for j in range(n_c):
            flags: list[str] = []
            lo, hi = boot.ci_low[j, m], boot.ci_high[j, m]
            if n_quest[j] < 2:
                flags.append("fewer than two questions: no interval or test")
                lo = hi = float("nan")
            elif boot.valid_fraction[j, m] < 1.0:
                flags.append(
                    f"d_rel undefined in {100 * (1 - boot.valid_fraction[j, m]):.1f}% of replicates"
                )
            if 2 <= n_inform[j] < MDD_RELIABLE_QUESTIONS:
                flags.append(
                    f"MDD from {int(n_inform[j])} questions: below {MDD_RELIABLE_QUESTIONS} its "
                    "power depends on the pilot draw (74-80% over two draws at 8 questions, "
                    "80% within +-4 at 30; docs/calibration.md): read it as approximate"
                )
            detected = bool(p_adj[j] < alpha) if np.isfinite(p_adj[j]) else False
            eq_j = float("nan") if detected or not np.isfinite(p_adj[j]) else float(eq[j])
            cd = (
                cohens_d_from_sums(sums, j, none_arr, m)
                if none_codes and classes[j] != "none"
                else float("nan")
            )
            conds.append(
                ConditionStats(
                    name=names[j],
                    klass=classes[j],
                    n=int(n_rows[j]),
                    n_questions=int(n_quest[j]),
                    mean=float(means[j, m]),
                    d_rel=float(boot.estimate[j, m]),
                    ci_low=float(lo),
                    ci_high=float(hi),
                    p_value=float(p[j]),
                    p_adjusted=float(p_adj[j]),
                    cohens_d=cd,
                    letters=sep.letters[j],
                    mdd=float(mdd[j]) if n_quest[j] >= 2 else float("nan"),
                    mdd_raw=float(mdd_raw[j]) if n_quest[j] >= 2 else float("nan"),
                    equivalence_bound=eq_j,
                    flags=tuple(flags),
                )
            )
        mflags = [*bootstrap_flags(n_boot), *ref_flag]
        if not np.isfinite(boot.noise_sd[m]) or boot.noise_sd[m] == 0:
            mflags.append("the noise floor has no spread (sd 0): d_rel is undefined")
        mixed: MixedModelResult | None = None
        mixed_err = ""
        try:
            mixed = fit_random_intercept_sums(
                qs.n, qs.sums[:, :, m], float(sumsq[m]), names=names, reference=ref
            )
            mixed = _unshift(mixed, float(qs.shift[m]))
        except (ValueError, np.linalg.LinAlgError) as exc:
            mixed_err = str(exc)
            mflags.append(f"mixed model not fitted: {exc}")
        nt = null_test_from_sums(
            sums, m, condition_names=names, sample_names=sample_names, has_sample=has_sample
        )
        nd: NoiseDecomposition | None = noise_decomposition_from_sums(
            sums, m, has_sample=has_sample
        )
        validity = MetricValidity(
            specificity=specificity(
                names,
                classes,
                boot.estimate[:, m],
                p_adj,
                alpha=alpha,
                ci90_low=boot.ci90_low[:, m],
                ci90_high=boot.ci90_high[:, m],
                margin=margin,
            ),
            sensitivity=sensitivity(names, classes, boot.estimate[:, m], p_adj),
        )
        metric_results.append(
            MetricStats(
                metric=metric,
                noise_mean=float(boot.noise_mean[m]),
                noise_sd=float(boot.noise_sd[m]),
                conditions=tuple(conds),
                mixed_model=mixed,
                mixed_model_error=mixed_err,
                null_test=nt,
                noise_decomposition=nd,
                validity=validity,
                flags=tuple(mflags),
            )
        )
    conv = convergent_validity({metric: means[:, k] for k, metric in enumerate(metrics)})
    mv = ModelValidity(
        metrics=tuple((r.metric, r.validity) for r in metric_results), convergent=conv
    )
    return ModelStats(model=model_name, metrics=tuple(metric_results), validity=mv)


def _unshift(res: MixedModelResult, shift: float) -> MixedModelResult:
    """Move the intercept back to the drift scale (the fit ran on shifted values)."""
    from dataclasses import replace

    return replace(res, intercept=res.intercept + shift)


def analyze_table(
    table: Any,
    *,
    metrics: Sequence[str] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: Seed = None,
    alpha: float = 0.05,
    margin: float = SPECIFICITY_MARGIN,
) -> StudyStats:
    """Run the full statistics of a drift study.

    Args:
        table: a :class:`StatsInput`, or columns (pandas DataFrame or mapping of arrays)
            with ``question_id``, ``condition``, ``condition_class``, metric columns and
            optional ``model`` and ``sample``.
        metrics: metric columns to analyse (default: all non-reserved columns).
        bootstrap: cluster-bootstrap replicates ``B``.
        seed: integer seed or ``numpy.random.Generator``; with the same seed the result
            is identical under both implementations.
        alpha: level for BH decisions, letters and specificity.
        margin: equivalence margin (d_rel) of the specificity check.

    Returns:
        A :class:`StudyStats`; ``.to_dict()`` gives the ``driftlens stats`` JSON.

    Raises:
        ValueError: the table cannot be analysed (message says why).
    """
    inp = (
        table if isinstance(table, StatsInput) else stats_input_from_columns(table, metrics=metrics)
    )
    if metrics and isinstance(table, StatsInput) and tuple(metrics) != inp.metrics:
        idx = [inp.metrics.index(m) for m in metrics]
        inp = StatsInput(
            question=inp.question,
            condition=inp.condition,
            model=inp.model,
            values=inp.values[:, idx],
            metrics=tuple(metrics),
            condition_names=inp.condition_names,
            condition_classes=inp.condition_classes,
            model_names=inp.model_names,
            sample=inp.sample,
            sample_names=inp.sample_names,
            label_run=inp.label_run,
        )
    if inp.values.shape[0] == 0:
        raise ValueError("the table has no rows")
    if bootstrap < 1:
        raise ValueError("bootstrap must be at least 1")
    root = as_generator(seed)
    model_codes = np.unique(inp.model)
    children = root.spawn(len(model_codes)) if len(model_codes) > 1 else [root]
    results = []
    for code, rng in zip(model_codes, children, strict=True):
        rows: NDArray[np.bool_] | slice = (
            slice(None) if len(model_codes) == 1 else inp.model == code
        )
        results.append(
            _analyze_model(
                inp,
                rows,
                inp.model_names[int(code)],
                n_boot=bootstrap,
                rng=rng,
                alpha=alpha,
                margin=margin,
            )
        )
    return StudyStats.of(results, n_boot=bootstrap, seed=seed, margin=margin)
