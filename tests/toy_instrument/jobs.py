"""The toy's background jobs: what ``python -m study.jobs.run toy KIND JSON`` runs.

The plugin's ``jobs`` part names :data:`JOBS`; the study-level job runner resolves it
through the instrument registry, so a job of the toy starts without the CLI.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session

from storage.errors import InputError
from storage.settings import Settings
from tests.toy_instrument.store import run_coin


def run_job(args: Mapping[str, Any], *, session: Session, settings: Settings) -> dict[str, Any]:
    """Run (or resume) the coin run ``args["run"]`` with ``args["model"]``.

    Raises:
        InputError: ``run`` or ``model`` is missing.
    """
    missing = [k for k in ("run", "model") if not isinstance(args.get(k), str)]
    if missing:
        raise InputError(f"A toy run job needs {' and '.join(missing)} (text).")
    samples = int(args.get("samples", 8))
    out = run_coin(str(args["run"]), model=str(args["model"]), samples=samples, session=session)
    return out.to_dict()


#: Job kind → function (the plugin's ``jobs`` part).
JOBS = {"run": run_job}
