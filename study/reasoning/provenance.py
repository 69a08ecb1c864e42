"""What produced an analysis's numbers: runs, models, ontology, labeler, software."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from sqlmodel import Session

import driftlens_core
from storage.models import GenerationRun, LabelerSpec, ModelSpecRow, OntologyVersion
from study.reasoning.config import AnalysisConfig
from study.reasoning.report import Provenance


def software_versions() -> dict[str, str]:
    """Versions of python and the packages the numbers depend on."""
    out = {"python": platform.python_version()}
    for dist in ("numpy", "scipy", "pandas", "matplotlib", "driftlens-workbench"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _run_record(run: GenerationRun, model: ModelSpecRow | None) -> dict[str, Any]:
    return {
        "run": run.name,
        "simulated": bool(run.simulated or (model is not None and model.simulated)),
        "model": (
            {
                "spec": model.spec,
                "provider": model.provider,
                "service": model.service,
                "model": model.model,
                "simulated": model.simulated,
                "params": model.params,
            }
            if model is not None
            else {"spec": str(run.model_spec_id)}
        ),
        "sampling": dict(run.sampling),
        "prompt_version": run.prompt_version,
        "run_config": dict(run.config),
    }


def analysis_provenance(
    *,
    runs: list[tuple[GenerationRun, ModelSpecRow | None]],
    version: OntologyVersion,
    labeler: LabelerSpec,
    config: AnalysisConfig,
    n_pairs: int,
    skipped: dict[str, int],
    labeler_settings: str | None = None,
) -> Provenance:
    records = [_run_record(run, model) for run, model in runs]
    first = records[0]
    return Provenance(
        run=", ".join(r["run"] for r in records),
        simulated=any(r["simulated"] for r in records),
        model=first["model"],
        sampling=first["sampling"],
        prompt_version=first["prompt_version"],
        run_config=first["run_config"],
        runs=records,
        ontology={
            "id": version.id,
            "name": version.name,
            "version": version.version,
            "content_hash": version.content_hash,
        },
        labeler={
            "id": labeler.id,
            "name": labeler.name,
            "kind": labeler.kind,
            "model": labeler.model,
            "temperature": labeler.temperature,
            "seed": labeler.seed,
            "prompt_version": labeler.prompt_version,
            "params": labeler.params,
            # what every LLM label was asked with (labeler_settings); absent for the others
            **({"settings": labeler_settings} if labeler_settings is not None else {}),
        },
        analysis={
            "bootstrap": config.bootstrap,
            "seed": config.seed,
            "sri_alpha": config.sri_alpha,
            "metrics": list(config.metrics),
            "condition_unit": config.condition_unit,
            "test_alpha": 0.05,
            "pairing": "every response against its question's baseline sample 0",
        },
        implementation=driftlens_core.implementation(),
        software=software_versions(),
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        drift_pairs=n_pairs,
        skipped=dict(skipped),
    )


def labeler_settings(
    runs: Sequence[GenerationRun], labeler: LabelerSpec, *, version_id: int, session: Session
) -> str | None:
    """The one request setting of an LLM labeler's labels of the runs, as a provenance line.

    ``None`` for labelers that ask no model (keywords, embed). Goes through
    :mod:`study.judge_settings`, the mechanism every judge's verdicts go through.

    Raises:
        InputError: the labels were made under different settings (never pooled).
    """
    from storage.repo.labels import step_label_settings
    from study.judge_settings import collect_settings, refuse_mixed_settings, settings_lines

    if labeler.kind not in ("llm", "sim") or labeler.id is None:
        return None
    name = labeler.name or labeler.key
    seen = step_label_settings(
        [r.id for r in runs if r.id is not None],
        labeler_id=labeler.id,
        ontology_version_id=version_id,
        session=session,
    )
    by_judge = collect_settings((name, s) for s in seen)
    refuse_mixed_settings(by_judge, what=f"run(s) {', '.join(r.name for r in runs)}")
    lines = settings_lines(by_judge)
    return lines[0][1] if lines else None
