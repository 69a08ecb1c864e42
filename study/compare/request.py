"""A comparison the Compare page asks for: typed, keyed, computed inline or as a job.

:class:`CompareRequest` is the page's question (runs, instrument, :class:`CompareOptions`),
parsed once from the form. The page calls :func:`study.compare.compare_runs` with it
directly when the work is small (:attr:`CompareRequest.inline`: pairs x bootstrap
replicates up to :data:`INLINE_MAX_WORK`), so nothing is written and nothing is parsed
back: ``bench/compare_page.py`` measured one pair of the shipped disposition batteries at
0.2-0.3 s CPU inline against 8-12 s wall for the same comparison as a job (a fresh process
imports the stack first; ``docs/performance.md``). A bigger one
runs as a background job of the same service: the study-level job ``compare run``
(:data:`JOBS`, announced in the ``driftlens.job_runners`` entry-point group) receives
the request as JSON, calls ``compare_runs`` with the same typed options and writes the
:class:`Comparison` (and its report) into a folder named by a key of the request and the
data revision (:func:`study.compare.service.data_revision`): new answers, labels or scores
give a new key, so the page computes again instead of showing a stale result, and the
same request on the same data (a reload, another tab) reuses the finished folder.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from itertools import combinations
from pathlib import Path
from typing import Any

from sqlmodel import Session

from storage.errors import InputError
from storage.settings import Settings
from study.compare.types import CompareOptions, Comparison

#: The runner (entry-point name) and kind of the Compare page's background job.
RUNNER = "compare"
JOB = "run"
#: The job row's kind (what the page's job panel shows).
KIND = f"{RUNNER} {JOB}"
#: Pairs x bootstrap replicates the page computes inline; above it, a job computes.
INLINE_MAX_WORK = 3000


@dataclass(frozen=True)
class CompareRequest:
    """One comparison: the runs in the order picked, the instrument and its options.

    Raises:
        InputError: fewer than two runs (the service says the rest in one sentence).
    """

    runs: tuple[str, ...]
    instrument: str
    options: CompareOptions

    def __post_init__(self) -> None:
        if len(self.runs) < 2:
            raise InputError("Name at least two runs to compare.")

    @property
    def pairs(self) -> int:
        """How many pairs of runs the comparison bootstraps."""
        return len(list(combinations(self.runs, 2)))

    @property
    def inline(self) -> bool:
        """Whether the page computes it while drawing (small), not as a job."""
        return self.pairs * self.options.n_boot <= INLINE_MAX_WORK

    @property
    def title(self) -> str:
        """What the Jobs page and the panel show."""
        return f"Compare {' vs '.join(self.runs)} ({self.instrument})"

    def key(self, revision: tuple[object, ...]) -> str:
        """Digest of the request and the data revision (the job's scope and folder)."""
        text = json.dumps([self.to_args(), [str(r) for r in revision]], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_args(self) -> dict[str, Any]:
        """The request as a job's JSON arguments (an MDD margin, NaN, as ``"mdd"``)."""
        options = asdict(self.options)
        margin = self.options.margin
        options["margin"] = "mdd" if margin is not None and math.isnan(margin) else margin
        return {"runs": list(self.runs), "instrument": self.instrument, "options": options}

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> CompareRequest:
        """The request :meth:`to_args` wrote.

        Raises:
            InputError: a field is missing or of the wrong type (one sentence).
        """
        try:
            runs = tuple(str(r) for r in args["runs"])
            instrument = str(args["instrument"])
            raw = dict(args.get("options") or {})
        except (KeyError, TypeError):
            raise InputError("A compare job needs runs, instrument and options.") from None
        known = {f.name for f in fields(CompareOptions)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise InputError(f"A compare job's options hold unknown {unknown[0]!r}.")
        if raw.get("margin") == "mdd":
            raw["margin"] = math.nan
        try:
            options = CompareOptions(**raw)
        except TypeError as exc:
            raise InputError(f"A compare job's options are malformed: {exc}.") from None
        return cls(runs=runs, instrument=instrument, options=options)


def job_folder(workspace: Path, key: str) -> Path:
    """The folder a compare job of ``key`` writes into (under the workspace's ``jobs/``)."""
    return Path(workspace).resolve() / "jobs" / f"compare-{key}"


def read_job_comparison(folder: Path) -> Comparison | None:
    """The comparison a finished job wrote into ``folder``, or ``None`` while it has not."""
    path = folder / "comparison.json"
    if not path.is_file():
        return None
    return Comparison.from_dict(json.loads(path.read_text(encoding="utf-8")))


def run_compare_job(
    args: Mapping[str, Any], *, session: Session, settings: Settings
) -> dict[str, Any]:
    """The ``compare run`` job: ``compare_runs`` on the request, written into its folder.

    ``args``: ``{"request": CompareRequest.to_args(), "digest": KEY}`` (the request's
    :meth:`~CompareRequest.key`: a job argument named like a secret is refused).

    Raises:
        InputError: a malformed request, or one the service refuses.
        NotFoundError: a run does not exist.
    """
    from study.compare.report import write_comparison_report
    from study.compare.service import compare_runs
    from study.jobs.reporter import current_reporter

    request = CompareRequest.from_args(args.get("request") or {})
    key = str(args.get("digest") or "")
    if not key.isalnum():
        raise InputError("A compare job needs the digest of its request (letters and digits).")
    reporter = current_reporter()
    if reporter is not None:
        reporter.stage("Comparing runs")
    comparison = compare_runs(
        request.runs, instrument=request.instrument, session=session, options=request.options,
        progress=None if reporter is None else reporter.progress,
    )  # fmt: skip
    folder = job_folder(settings.workspace, key)
    folder.mkdir(parents=True, exist_ok=True)
    if reporter is not None:
        reporter.stage("Writing the report")
    write_comparison_report(comparison, folder / "comparison")
    # written whole, then renamed: a page that finds the file finds all of it
    fd, tmp = tempfile.mkstemp(prefix=".comparison.", suffix=".tmp", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(comparison.to_dict(), fh)
    os.replace(tmp, folder / "comparison.json")
    return {"compare": key, "rows": len(comparison.rows)}


#: The compare service's jobs table (entry point ``compare`` of ``driftlens.job_runners``).
JOBS = {JOB: run_compare_job}
