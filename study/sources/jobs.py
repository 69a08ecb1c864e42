"""Source reliance's background jobs (``python -m study.jobs.run sources KIND JSON``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session

from storage.errors import InputError
from storage.settings import Settings


def run_job(args: Mapping[str, Any], *, session: Session, settings: Settings) -> dict[str, Any]:
    """Run (or resume) the stored run ``args["run"]`` of ``args["model"]`` on the smallest
    study's items (:mod:`study.sources.kit`).

    Raises:
        InputError: ``run`` or ``model`` is missing.
    """
    from study.sources.kit import study_kit

    missing = [k for k in ("run", "model") if not isinstance(args.get(k), str)]
    if missing:
        raise InputError(f"A sources run job needs {' and '.join(missing)} (text).")
    out = study_kit().run(str(args["run"]), model=str(args["model"]), session=session,
                          settings=settings)  # fmt: skip
    return {"run": out.run, "stored": out.stored, "added": out.added, "total": out.total}


#: Job kind → function (the plugin's ``jobs`` part).
JOBS = {"run": run_job}
