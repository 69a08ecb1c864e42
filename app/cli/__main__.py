"""``python -m app.cli``: the ``driftlens`` command (jobs start it through the ``cli`` runner
of ``python -m study.jobs.run``, :mod:`app.cli.job_runner`)."""

from app.cli import main

main()
