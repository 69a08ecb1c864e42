"""Two ontology versions on one run: did the new version change the labels or only the words?

A run labeled by one labeler under versions A and B has two labels per step. This module
compares them (issue #21, Deliver 2):

* **labels that changed** — steps labeled under both versions whose leaf differs, with the
  share of all such steps (steps labeled under only one version are counted apart);
* **per-leaf flow** — for every leaf of A, where its steps went under B;
* **agreement** — the share of identical labels and Cohen's κ between the two versions'
  labels on the same steps (κ = 1: the new version changed only the words);
* **drift conclusions** — d_rel per condition class and per condition under each version
  (question-cluster bootstrap, BH over the conditions of each metric), the paired
  difference ``d_rel(B) − d_rel(A)`` on the same questions, and the table of rows whose
  significance flipped.
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session, col, select

from driftlens_core.agreement import cohens_kappa
from driftlens_core.bootstrap import drel_bootstrap, question_sums
from driftlens_core.effects import bh_adjust
from storage.errors import InputError
from study.compare.types import CompareOptions, StatRow
from study.reasoning.drift_files import METRICS


@dataclass(frozen=True)
class LeafFlow:
    """Where the steps of one leaf of version A went under version B."""

    leaf_a: str
    steps: int
    kept: int
    to: tuple[tuple[str, int], ...]  # (leaf under B, steps), most first


@dataclass(frozen=True)
class Flip:
    """A condition (or class) whose drift significance differs between the versions."""

    metric: str
    scope: str
    drel_a: float
    p_adjusted_a: float
    drel_b: float
    p_adjusted_b: float
    significant_a: bool
    significant_b: bool


@dataclass(frozen=True)
class VersionComparison:
    """Everything :func:`compare_versions` found."""

    run: str
    labeler: str
    version_a: str
    version_b: str
    shared_steps: int
    only_a: int
    only_b: int
    changed: int
    kappa: float
    flows: tuple[LeafFlow, ...]
    significance: pd.DataFrame  # metric, scope, drel/p per version, significant per version
    flips: tuple[Flip, ...]
    paired: tuple[StatRow, ...]
    simulated: bool

    @property
    def changed_share(self) -> float:
        """Share of the steps labeled under both versions whose leaf changed."""
        return self.changed / self.shared_steps if self.shared_steps else float("nan")

    @property
    def identical_share(self) -> float:
        """Share of identical labels (1 − :attr:`changed_share`)."""
        return 1.0 - self.changed_share

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data (NaN becomes ``None``)."""

        def clean(v: Any) -> Any:
            return None if isinstance(v, float) and not np.isfinite(v) else v

        return {
            "run": self.run, "labeler": self.labeler, "version_a": self.version_a,
            "version_b": self.version_b, "simulated": self.simulated,
            "shared_steps": self.shared_steps, "only_a": self.only_a, "only_b": self.only_b,
            "changed": self.changed, "changed_share": clean(self.changed_share),
            "kappa": clean(self.kappa),
            "flows": [{"leaf_a": f.leaf_a, "steps": f.steps, "kept": f.kept,
                       "to": [list(t) for t in f.to]} for f in self.flows],
            "flips": [{k: clean(v) for k, v in f.__dict__.items()} for f in self.flips],
            "significance": [{k: clean(v) for k, v in r.items()}
                             for r in self.significance.to_dict("records")],
            "paired": [r.to_dict() for r in self.paired],
        }  # fmt: skip


def _labels(
    run_id: int, labeler_id: int, version_id: int, *, session: Session
) -> dict[tuple[int, int], str]:
    """``(response id, step index) → leaf`` of one run, labeler and version (first repeat)."""
    from storage.models import Response, StepLabel

    stmt = (
        select(StepLabel.response_id, StepLabel.step_index, StepLabel.symbol)
        .join(Response, col(Response.id) == col(StepLabel.response_id))
        .where(Response.run_id == run_id, StepLabel.labeler_id == labeler_id)
        .where(StepLabel.ontology_version_id == version_id, StepLabel.repeat == 0)
    )
    return {(int(r), int(i)): str(s) for r, i, s in session.exec(stmt)}


def _significance(drift: pd.DataFrame, *, n_boot: int, seed: int, alpha: float) -> pd.DataFrame:
    """d_rel and BH-adjusted p per metric for every condition and every condition class."""
    rows = []
    for level in ("class", "condition"):
        d = drift.copy()
        klass = d["condition_class"].astype(str)
        if level == "class":
            d["condition"] = np.where(klass == "noise", d["condition"].astype(str),
                                      "class " + klass)  # fmt: skip
        q_codes, _ = pd.factorize(d["question_id"].astype(str))
        c_codes, c_names = pd.factorize(d["condition"].astype(str))
        noise = np.array([
            bool((klass[c_codes == j] == "noise").any()) for j in range(len(c_names))
        ])  # fmt: skip
        qs = question_sums(q_codes, c_codes, d[list(METRICS)].to_numpy(float), noise)
        boot = drel_bootstrap(qs, n_boot=n_boot, seed=seed)
        for m, metric in enumerate(METRICS):
            keep = [j for j in range(len(c_names)) if not (level == "class" and noise[j])]
            adj = bh_adjust(boot.p_value[keep, m])
            for j, p in zip(keep, adj, strict=True):
                rows.append({"metric": metric, "scope": str(c_names[j]),
                             "drel": float(boot.estimate[j, m]), "p_adjusted": float(p),
                             "significant": bool(p < alpha)})  # fmt: skip
    return pd.DataFrame(rows)


def compare_versions(
    run: str,
    version_a: str,
    version_b: str,
    *,
    labeler: str,
    session: Session,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> VersionComparison:
    """Compare one run's labels and drift conclusions under two ontology versions.

    Raises:
        NotFoundError: no such run or version.
        InputError: the two versions are the same, or the run has no labels under one.
    """
    from ontology.labelers.registry import ensure_labeler_spec
    from ontology.versions import get_version, version_label
    from storage.repo.runs import require_run
    from study.reasoning.compare import ADAPTER

    row = require_run(run, session=session)
    va, vb = get_version(version_a, session=session), get_version(version_b, session=session)
    if va.id == vb.id:
        raise InputError(f"{version_a!r} and {version_b!r} are the same ontology version.")
    spec = ensure_labeler_spec(labeler, session=session)
    assert row.id is not None and spec.id is not None and va.id is not None and vb.id is not None
    la = _labels(row.id, spec.id, va.id, session=session)
    lb = _labels(row.id, spec.id, vb.id, session=session)
    name_a, name_b = version_label(va), version_label(vb)
    for name, labels in ((name_a, la), (name_b, lb)):
        if not labels:
            command = ["driftlens", "label", "--run", run, "--labeler", labeler]
            command += ["--ontology-version", name]
            raise InputError(
                f"Run {run!r} has no labels by {labeler!r} under ontology version {name}; "
                f"label it first: {shlex.join(command)}"
            )
    shared = sorted(set(la) & set(lb))
    a_leaf = [la[k] for k in shared]
    b_leaf = [lb[k] for k in shared]
    changed = sum(x != y for x, y in zip(a_leaf, b_leaf, strict=True))
    flow: dict[str, Counter[str]] = {}
    for x, y in zip(a_leaf, b_leaf, strict=True):
        flow.setdefault(x, Counter())[y] += 1
    flows = tuple(
        LeafFlow(leaf, sum(c.values()), c.get(leaf, 0), tuple(c.most_common()))
        for leaf, c in sorted(flow.items(), key=lambda kv: -sum(kv[1].values()))
    )
    options = CompareOptions(labeler=labeler, n_boot=n_boot, seed=seed, alpha=alpha)
    data_a = ADAPTER.load(run, session=session, options=_with_version(options, va.id))
    data_b = ADAPTER.load(run, session=session, options=_with_version(options, vb.id))
    questions = sorted(data_a.items & data_b.items)
    paired = tuple(ADAPTER.pair(data_a, data_b, questions, options=options, margin=None))
    sig_a = _significance(data_a.extra.drift, n_boot=n_boot, seed=seed, alpha=alpha)
    sig_b = _significance(data_b.extra.drift, n_boot=n_boot, seed=seed, alpha=alpha)
    both = sig_a.merge(sig_b, on=["metric", "scope"], how="outer", suffixes=("_a", "_b"))
    flips = tuple(
        Flip(
            str(r["metric"]),
            str(r["scope"]),
            float(r["drel_a"]),
            float(r["p_adjusted_a"]),
            float(r["drel_b"]),
            float(r["p_adjusted_b"]),
            bool(r["significant_a"]),
            bool(r["significant_b"]),
        )
        for r in both.to_dict("records")
        if _sig(r.get("significant_a")) != _sig(r.get("significant_b"))
    )
    return VersionComparison(
        run=run, labeler=labeler, version_a=name_a, version_b=name_b, shared_steps=len(shared),
        only_a=len(set(la) - set(lb)), only_b=len(set(lb) - set(la)), changed=changed,
        kappa=float(cohens_kappa(a_leaf, b_leaf)), flows=flows, significance=both,
        flips=flips, paired=paired, simulated=data_a.simulated,
    )  # fmt: skip


def _sig(value: Any) -> bool:
    """A significance flag of the merged table (a row missing under one version: False)."""
    return False if value is None or (isinstance(value, float) and np.isnan(value)) else bool(value)


def _with_version(options: CompareOptions, version_id: int) -> CompareOptions:
    from dataclasses import replace

    return replace(options, ontology_version=str(version_id))
