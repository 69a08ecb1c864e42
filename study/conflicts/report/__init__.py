"""The memory-conflict report, in three parts.

* :mod:`.build` — :func:`build_report` reads the stored runs and scores and computes the
  report's numbers, writes its files (HTML, Markdown, the score CSV, the curve figure);
* :mod:`.document` — what the report is (:class:`~.document.ConflictReport`) and how it
  reads: its sections and their HTML and Markdown renderings;
* :mod:`.abstention` — the headline read against the no-memory baseline and the
  abstention tables.

``build_report`` is the package's entry point, importable from here.
"""

from __future__ import annotations

from study.conflicts.report.build import build_report

__all__ = ["build_report"]
