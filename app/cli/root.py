"""The root Typer application and the registry of command modules.

Each command group lives in its own module under ``app/cli/`` and exposes
``register(app: typer.Typer) -> None``; heavy imports happen inside the commands so
``driftlens --help`` stays fast.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated

import typer

from app.cli.context import CliState
from app.cli.job_hooks import attach_from_env, remember_root
from app.instruments import cli_modules as instrument_cli_modules

# One line per generic command module (the instruments' come from app/instruments.py); a
# missing module is a bug, so no silent skipping.
COMMAND_MODULES: tuple[str, ...] = (
    "app.cli.workspace_cmds",
    "app.cli.demo_cmds",
    "app.cli.app_cmds",
    "app.cli.perturbations_cmds",
    "app.cli.sim_cmds",
    "app.cli.annotate_cmds",
    "app.cli.labelstudio_cmds",
    "app.cli.judges_cmds",
    "app.cli.compare_cmds",
    "app.cli.plan_cmds",
)


def build_app() -> typer.Typer:
    """Create the CLI with every registered command group."""
    app = typer.Typer(
        name="driftlens",
        help=(
            "DriftLens Workbench: does what an assistant remembers about a user "
            "change how it reasons?"
        ),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode="rich",
    )

    @app.callback()
    def root(
        ctx: typer.Context,
        workspace: Annotated[
            Path | None,
            typer.Option(
                "--workspace",
                "-w",
                envvar="DRIFTLENS_WORKSPACE",
                help="Workspace folder (default ./driftlens-workspace).",
            ),
        ] = None,
        db: Annotated[
            str | None,
            typer.Option(
                "--db",
                envvar="DRIFTLENS_DB_URL",
                help="Database URL (default: SQLite file in the workspace).",
            ),
        ] = None,
        structured: Annotated[
            str | None,
            typer.Option(
                "--structured",
                envvar="DRIFTLENS_STRUCTURED",
                help=(
                    "Structured outputs for judges, labelers and classifiers: auto (ask in "
                    "the answer's schema, prompt-and-repair where the endpoint refuses), on "
                    "(a refusal is an error) or off (prompt-and-repair only). Default auto."
                ),
            ),
        ] = None,
    ) -> None:
        from llm.stall import run_stall_watch
        from llm.structured import use_structured

        # one stall budget for the whole command (a run of any instrument, a page's job):
        # an endpoint that answered nothing for it is not waited on again (llm/stall.py)
        ctx.with_resource(run_stall_watch())
        if structured is not None:
            # for this invocation only: the mode is reset when the command's context closes,
            # so a later call in the same process (a test's CliRunner) never inherits it
            ctx.with_resource(use_structured(structured))
        ctx.obj = CliState(workspace=workspace, db_url=db)
        remember_root(workspace, db)
        attach_from_env(workspace, db)  # a submitted job reports into its row

    # the generic groups, then each instrument's (app/instruments.py), then the comparison
    *generic, compare = COMMAND_MODULES
    for name in (*generic, *instrument_cli_modules(), compare):
        importlib.import_module(name).register(app)
    return app
