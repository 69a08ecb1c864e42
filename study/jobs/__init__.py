"""The job system: every long action runs in its own process, started by ``study.jobs.run``.

A page calls :func:`submit_job` for a ``driftlens …`` command or :func:`submit_study_job`
for an instrument's job (a detached process that outlives the app server, its
output in a log file under the workspace, ``DRIFTLENS_JOB_ID`` in its environment); the
command reports its stage and ``(done, total)`` into its ``job`` row
(:mod:`study.jobs.reporter`, through the CLI's progress bars), and pages read the rows back
(:func:`list_jobs`, :func:`get_job`). A command started from a shell records its own row
when it first shows progress, so CLI work shows on the Jobs page too. :func:`cancel_job`
stops a job's process group (:func:`cancel_in_background` from a page: it answers at
once); :func:`resume_job` submits the same command again (every long command resumes where
it stopped). A ``running`` row whose process is gone is marked ``interrupted`` when read.
No Streamlit here: ``app/ui/job_panel.py`` is the page side.
"""

from study.jobs.records import JobRecord
from study.jobs.service import (
    cancel_failure,
    cancel_in_background,
    cancel_job,
    cancelling,
    get_job,
    list_jobs,
    resume_job,
    submit_job,
    submit_study_job,
)

__all__ = [
    "JobRecord",
    "cancel_failure",
    "cancel_in_background",
    "cancel_job",
    "cancelling",
    "get_job",
    "list_jobs",
    "resume_job",
    "submit_job",
    "submit_study_job",
]
