"""The Compare page's comparison as a background job (``driftlens compare`` in a folder).

A comparison loads every run and bootstraps each pair: over a second on a small study
(two disposition arms of 80 items: 1.1 s at B = 1000), so the page never runs it inline.
It submits ``driftlens compare … --json --out`` as a job (``study.jobs``) writing into a
folder of its own, named by a key of the inputs and the data revision
(:func:`study.compare.service.data_revision`): new answers, labels or scores give a new
key, so the page computes again instead of showing a stale result, and the same inputs
on the same data (a reload, another tab) reuse the finished folder.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from study.compare.types import Comparison

#: The job kind (the command path) the Compare page's panel shows.
KIND = "compare"


@dataclass(frozen=True)
class CompareJob:
    """One comparison the page needs: where its job writes and the command it runs.

    Attributes:
        key: digest of the inputs and the data revision (the job's scope).
        folder: the job's own folder under the workspace's ``jobs/``.
        argv: ``compare RUN_A RUN_B … --json … --out …`` (after ``driftlens``).
        title: what the Jobs page and the panel show.
    """

    key: str
    folder: Path
    argv: tuple[str, ...]
    title: str

    @property
    def json_path(self) -> Path:
        """The comparison as JSON (written whole, then renamed: present means done)."""
        return self.folder / "comparison.json"

    @property
    def report_dir(self) -> Path:
        """The report folder (HTML, Markdown, JSON, figures, tables)."""
        return self.folder / "comparison"

    @property
    def scope(self) -> dict[str, str]:
        """The job's scope: the panel shows only this comparison's jobs."""
        return {"compare": self.key}


def compare_job(
    runs: list[str],
    *,
    instrument: str,
    labeler: str | None,
    margin: str,
    n_boot: int,
    top: int,
    revision: tuple[object, ...],
    workspace: Path,
) -> CompareJob:
    """The job of one comparison of ``runs`` at one data revision.

    Args:
        runs: the runs in the order picked.
        instrument: the adapter name.
        labeler: reasoning drift's labeler (``None`` elsewhere).
        margin: the margin as typed (blank: the instrument's default; ``mdd``).
        n_boot: bootstrap replicates.
        top: most different items kept per pair.
        revision: :func:`study.compare.service.data_revision` now.
        workspace: the workspace folder (the job's folder goes under its ``jobs/``).
    """
    inputs = [instrument, list(runs), labeler, margin, n_boot, top, [str(r) for r in revision]]
    key = hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:16]
    folder = Path(workspace).resolve() / "jobs" / f"compare-{key}"
    argv = ["compare", *runs, "--instrument", instrument, "--bootstrap", str(n_boot),
            "--top", str(top), "--json", str(folder / "comparison.json"),
            "--out", str(folder / "comparison")]  # fmt: skip
    if labeler:
        argv += ["--labeler", labeler]
    if margin:
        argv += ["--margin", margin]
    title = f"Compare {' vs '.join(runs)} ({instrument})"
    return CompareJob(key=key, folder=folder, argv=tuple(argv), title=title)


def read_comparison(job: CompareJob) -> Comparison | None:
    """The finished comparison of ``job``, or ``None`` while it has not been written."""
    if not job.json_path.is_file():
        return None
    return Comparison.from_dict(json.loads(job.json_path.read_text(encoding="utf-8")))
