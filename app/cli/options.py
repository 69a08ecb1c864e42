"""Options several command groups take with the same flag, default and help.

Each is one ``typer.Option`` that a command uses as a parameter's default
(``as_json: bool = JSON_OPTION``); the groups' own options stay in their modules.
"""

from __future__ import annotations

import typer

#: ``--json``: print the command's result as JSON instead of a table or sentence.
JSON_OPTION = typer.Option(False, "--json", help="Print JSON.")
#: ``--run``: the reasoning-drift run a command reads (required).
RUN_OPTION = typer.Option(..., "--run", help="Name of the generation run.")
#: ``--round``: the ontology round a command reads (required).
ROUND_OPTION = typer.Option(..., "--round", help="Round number.")
