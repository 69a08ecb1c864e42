"""The ``driftlens`` command line.

``main`` wraps the Typer application so that every expected failure (bad input,
unreachable server, bad token) ends as one clear sentence on stderr and a non-zero
exit status instead of a traceback. ``--debug`` (or ``DRIFTLENS_DEBUG=1``) shows the
traceback when a developer needs it.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    """Entry point of the ``driftlens`` console script."""
    try:
        from app.cli.errors import INTERRUPTED_EXIT, report_interrupted, report_user_error
        from app.cli.root import build_app
    except KeyboardInterrupt:
        # Ctrl-C while the command's modules are still loading: nothing has run yet, so
        # there is nothing to keep or resume (the error reporter itself may not be loaded).
        sys.stderr.write("Interrupted before the command started; nothing was changed.\n")
        raise SystemExit(130) from None

    debug = "--debug" in sys.argv or os.environ.get("DRIFTLENS_DEBUG") == "1"
    if "--debug" in sys.argv:
        sys.argv.remove("--debug")
    from app.cli import job_hooks
    from app.cli.errors import user_message

    try:
        app = build_app()
        rc = app(standalone_mode=False, prog_name="driftlens")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
        job_hooks.finish(code, interrupted=code == INTERRUPTED_EXIT)
        raise
    except BaseException as exc:  # the one place errors become messages
        found = user_message(exc)
        job_hooks.finish(
            1,
            error=found[0] if found else f"{type(exc).__name__}: {exc}",
            interrupted=found is not None and found[1] == INTERRUPTED_EXIT,
        )
        code = report_user_error(exc, debug=debug)
        raise SystemExit(code) from None
    finally:
        _shutdown_engines()
    if rc == INTERRUPTED_EXIT:
        # typer >= 0.2x turns Ctrl-C into a silent Exit(130) before we can see it.
        job_hooks.finish(INTERRUPTED_EXIT, interrupted=True)
        report_interrupted()
    else:
        job_hooks.finish(rc if isinstance(rc, int) else 0)
    raise SystemExit(rc if isinstance(rc, int) else 0)


def _shutdown_engines() -> None:
    """Stop in-process vLLM engines before exit (no hang, no orphan engine process).

    Only when the command used the vLLM backend: looking it up in ``sys.modules`` keeps
    every other command from importing it.
    """
    backend = sys.modules.get("llm.vllm_engine")
    if backend is not None:
        backend.shutdown_engines()
