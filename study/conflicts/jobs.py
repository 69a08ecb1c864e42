"""Memory conflicts' background jobs (``python -m study.jobs.run conflicts KIND JSON``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session

from storage.errors import InputError
from storage.settings import Settings


def run_job(args: Mapping[str, Any], *, session: Session, settings: Settings) -> dict[str, Any]:
    """Generate (or resume) and judge the run ``args["run"]`` of ``args["model"]`` on the
    smallest study's banks (:mod:`study.conflicts.kit`).

    Raises:
        InputError: ``run`` or ``model`` is missing.
    """
    from study.conflicts.kit import study_kit

    missing = [k for k in ("run", "model") if not isinstance(args.get(k), str)]
    if missing:
        raise InputError(f"A conflicts run job needs {' and '.join(missing)} (text).")
    out = study_kit().run(str(args["run"]), model=str(args["model"]), session=session,
                          settings=settings)  # fmt: skip
    return {"run": out.run, "stored": out.stored, "added": out.added, "total": out.total}


#: Job kind → function (the plugin's ``jobs`` part).
JOBS = {"run": run_job}
