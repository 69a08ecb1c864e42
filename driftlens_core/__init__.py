"""DriftLens compiled core: drift metrics, statistics and calibration on arrays.

Pure functions, no I/O. Every compiled kernel has a pure-Python twin; see
:mod:`driftlens_core._impl` for how the path is chosen. Names are resolved lazily so
``import driftlens_core`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from driftlens_core._impl import implementation, use_implementation

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # drift metrics (sequences.py, metrics.py with its twins in _metrics_python.py, compiled
    # in _metrics.pyx)
    "dtw_distance": "driftlens_core.metrics",
    "levenshtein": "driftlens_core.metrics",
    "js_distance": "driftlens_core.metrics",
    "sri": "driftlens_core.metrics",
    "pair_drift": "driftlens_core.metrics",
    "PairDrift": "driftlens_core.metrics",
    "pack_sequences": "driftlens_core.sequences",
    "PackedSequences": "driftlens_core.sequences",
    # statistics and calibration (bootstrap.py, mixed_model.py, effects.py, calibration.py,
    # validity.py, agreement.py, rewards.py, analysis.py; compiled in _bootstrap.pyx)
    "cluster_bootstrap_sums": "driftlens_core.bootstrap",
    "question_sums": "driftlens_core.bootstrap",
    "drel_bootstrap": "driftlens_core.bootstrap",
    "DrelBootstrap": "driftlens_core.bootstrap",
    "fit_random_intercept": "driftlens_core.mixed_model",
    "MixedModelResult": "driftlens_core.mixed_model",
    "cohens_d": "driftlens_core.effects",
    "welch_t": "driftlens_core.effects",
    "bh_adjust": "driftlens_core.effects",
    "compact_letter_display": "driftlens_core.effects",
    "separability": "driftlens_core.effects",
    "null_test": "driftlens_core.calibration",
    "noise_decomposition": "driftlens_core.calibration",
    "minimum_detectable": "driftlens_core.calibration",
    "equivalence_bound": "driftlens_core.calibration",
    "specificity": "driftlens_core.validity",
    "sensitivity": "driftlens_core.validity",
    "convergent_validity": "driftlens_core.validity",
    "ModelValidity": "driftlens_core.validity",
    "pairwise_agreement": "driftlens_core.agreement",
    "cohens_kappa": "driftlens_core.agreement",
    "krippendorff_alpha": "driftlens_core.agreement",
    "confusion_counts": "driftlens_core.agreement",
    "agreement_summary": "driftlens_core.agreement",
    # ordinal agreement and rubric statistics (ordinal.py, rubric.py, proportions.py)
    "weighted_kappa": "driftlens_core.ordinal",
    "ordinal_agreement": "driftlens_core.ordinal",
    "krippendorff_alpha_ordinal": "driftlens_core.ordinal",
    "cluster_mean": "driftlens_core.rubric",
    "paired_effect": "driftlens_core.rubric",
    "cluster_slope": "driftlens_core.rubric",
    "cluster_correlation": "driftlens_core.rubric",
    "proportion_interval": "driftlens_core.proportions",
    "lexical_diversity": "driftlens_core.rewards",
    "format_reward": "driftlens_core.rewards",
    "dtw_reward": "driftlens_core.rewards",
    "sri_reward": "driftlens_core.rewards",
    "grpo_reward": "driftlens_core.rewards",
    "analyze_table": "driftlens_core.analysis",
    "StatsInput": "driftlens_core.analysis",
    "StudyStats": "driftlens_core.analysis",
    # paired comparison of two runs (paired.py)
    "paired_ratio_difference": "driftlens_core.paired",
    "paired_drel_difference": "driftlens_core.paired",
    "PairedDifference": "driftlens_core.paired",
    "mcnemar_exact": "driftlens_core.paired",
    "wilcoxon_paired": "driftlens_core.paired",
    "sign_test": "driftlens_core.paired",
    "ranking_letters": "driftlens_core.paired",
    # prediction-powered estimates from a human slice (ppi.py; vectorised NumPy, no twin)
    "ppi_mean": "driftlens_core.ppi",
    "ppi_difference": "driftlens_core.ppi",
    "PPIArm": "driftlens_core.ppi",
    "PPIEstimate": "driftlens_core.ppi",
    "humans_for_half_width": "driftlens_core.ppi",
    "transport_check": "driftlens_core.ppi",
    "alt_test": "driftlens_core.alt_test",
    "AltTestResult": "driftlens_core.alt_test",
    # source reliance (logistic.py, source_reliance.py; pure Python: not hot)
    "fit_logit": "driftlens_core.logistic",
    "LogitResult": "driftlens_core.logistic",
    "source_influence": "driftlens_core.source_reliance",
    "average_influence": "driftlens_core.source_reliance",
    "summarize_reliance": "driftlens_core.source_reliance",
    "discrimination": "driftlens_core.source_reliance",
    "behaviour_type": "driftlens_core.source_reliance",
}

__all__ = ["implementation", "use_implementation", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'driftlens_core' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
