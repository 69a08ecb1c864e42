"""Disposition drift's background jobs (``python -m study.jobs.run disposition KIND JSON``)."""

from __future__ import annotations

from driftlens_plugins.kit import kit_run_job
from study.disposition.kit import study_kit

#: Job kind → function (the plugin's ``jobs`` part): the smallest study, run as a job.
JOBS = {"run": kit_run_job(study_kit, "disposition")}
