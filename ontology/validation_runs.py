"""Start a validation experiment from a request, hold its lease, and keep its result.

The four experiments of :mod:`ontology.validation` take different arguments; the front
ends describe one with an :class:`ExperimentRequest` (what the CLI's ``ontology validate``
options say) and :func:`run_experiment` checks it, runs it under a work lease
(``storage.repo.leases``, so the browser and the CLI never run the same experiment twice
at once) and returns its :class:`~ontology.validation.ValidationReport`.
:func:`save_result` keeps the report as a JSON file in the workspace's ``validation/``
folder and :func:`stored_results` lists those, newest first, so a result outlives the
page (and the server) that started it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlmodel import Session

from llm.specs import SpecField
from ontology.agreement_tracking import _json_safe
from ontology.labelers.base import Progress
from ontology.validation import (
    ValidationReport,
    cross_model_table,
    definition_robustness,
    human_label_check,
    within_model_stability,
)
from storage.errors import InputError
from storage.repo.leases import acquire_lease, release_lease

Experiment = Literal["stability", "robustness", "cross", "human"]

#: What each experiment does, in one line (the page lists these).
EXPERIMENTS: dict[str, str] = {
    "stability": "the same labeler labels a round's responses twice at T = 1",
    "robustness": "every definition paraphrased by a model; the labeler relabels the round",
    "cross": "one round under the refined and one under the original-style ontology",
    "human": "hand a labeler's labels of a round to Label Studio (label_check study)",
}

#: Folder of the workspace that holds stored results.
RESULTS_FOLDER = "validation"


class ExperimentRequest(BaseModel):
    """One validation experiment to run, with the options of ``ontology validate``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    experiment: Experiment
    round: int | None = Field(default=None, ge=1)
    labeler: str | None = None
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    model: SpecField | None = None
    run: str | None = None
    labelers: tuple[str, ...] = ()
    sample: int = Field(default=100, ge=1)
    seed: int = Field(default=0, ge=0)
    limit: int = Field(default=100, ge=1)
    #: Let an LLM labeler be the model of the run it labels (``--allow-self-judging``).
    allow_self_judging: bool = False

    def summary(self) -> str:
        """One line naming the experiment and its arguments."""
        allowed = ", self-judging allowed" if self.allow_self_judging else ""
        if self.experiment == "cross":
            return (
                f"cross: run {self.run}, labelers {', '.join(self.labelers)}, "
                f"sample {self.sample}, seed {self.seed}{allowed}"
            )
        extra = {
            "stability": f", T = {self.temperature:g}",
            "robustness": f", paraphrased by {self.model}",
            "human": f", {self.limit} labels",
        }[self.experiment]
        return f"{self.experiment}: round {self.round}, labeler {self.labeler}{extra}{allowed}"


def parse_request(data: dict[str, Any]) -> ExperimentRequest:
    """An :class:`ExperimentRequest` from plain values, or one clear sentence.

    Raises:
        InputError: a value is missing or out of range for the experiment.
    """
    try:
        request = ExperimentRequest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "request"
        raise InputError(f"validation experiment: {where}: {first['msg']}") from None
    need: dict[str, tuple[str, ...]] = {
        "stability": ("round", "labeler"),
        "robustness": ("round", "labeler", "model"),
        "cross": ("run",),
        "human": ("round", "labeler"),
    }
    missing = [f for f in need[request.experiment] if not getattr(request, f)]
    if missing:
        raise InputError(f"the {request.experiment} experiment needs a {missing[0]}")
    if request.experiment == "cross" and len(request.labelers) < 2:
        raise InputError("the cross experiment needs two or more labelers")
    return request


def run_experiment(
    request: ExperimentRequest, *, session: Session, progress: Progress | None = None
) -> ValidationReport:
    """Run one experiment under its work lease.

    Raises:
        LeaseHeldError: another live process runs the same experiment.
        InputError / NotFoundError: the round, run or labeler does not exist.
    """
    if request.experiment == "human":  # no labeling: a hand-off, nothing to hold
        assert request.round is not None and request.labeler is not None
        return human_label_check(
            request.round, request.labeler, session=session, limit=request.limit
        )
    lease = acquire_lease(
        f"validation:{request.experiment}",
        session=session,
        what=f"the {request.experiment} experiment",
    )
    try:
        if request.experiment == "stability":
            assert request.round is not None and request.labeler is not None
            return within_model_stability(
                request.round,
                request.labeler,
                session=session,
                temperature=request.temperature,
                progress=progress,
                allow_self_judging=request.allow_self_judging,
            )
        if request.experiment == "robustness":
            assert request.round is not None and request.labeler is not None and request.model
            return definition_robustness(
                request.round,
                request.labeler,
                model=request.model,
                session=session,
                progress=progress,
                allow_self_judging=request.allow_self_judging,
            )
        from ontology.versions import seed_ontologies

        assert request.run is not None
        seed_ontologies(session=session)
        session.commit()
        return cross_model_table(
            request.run,
            list(request.labelers),
            session=session,
            sample=request.sample,
            seed=request.seed,
            progress=progress,
            allow_self_judging=request.allow_self_judging,
        )
    finally:
        release_lease(lease, session=session)


@dataclass(frozen=True)
class StoredResult:
    """A validation report kept in the workspace."""

    path: Path
    finished_at: datetime
    request: ExperimentRequest
    report: ValidationReport


def save_result(
    request: ExperimentRequest, report: ValidationReport, *, workspace: Path
) -> StoredResult:
    """Write the report as ``validation/<time>-<experiment>.json`` (in one rename)."""
    folder = workspace / RESULTS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    data = {
        "version": 1,
        "finished_at": now.isoformat(timespec="seconds"),
        "request": request.model_dump(mode="json"),
        "report": _json_safe(asdict(report)),
    }
    path = folder / f"{now:%Y%m%d-%H%M%S-%f}-{request.experiment}.json"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=1)
    os.replace(tmp, path)
    return StoredResult(path, now, request, report)


def stored_results(*, workspace: Path) -> tuple[list[StoredResult], list[str]]:
    """Stored results, newest first, and one line per file that could not be read."""
    folder = workspace / RESULTS_FOLDER
    results: list[StoredResult] = []
    problems: list[str] = []
    for path in sorted(folder.glob("*.json"), reverse=True) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            report = data["report"]
            results.append(
                StoredResult(
                    path,
                    datetime.fromisoformat(data["finished_at"]),
                    ExperimentRequest.model_validate(data["request"]),
                    ValidationReport(
                        report["experiment"],
                        report["description"],
                        tuple(report["rows"]),
                        report["reference"],
                        tuple(report.get("notes", ())),
                    ),
                )
            )
        except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
            problems.append(f"{path.name}: not a readable validation result ({exc})")
    return results, problems
