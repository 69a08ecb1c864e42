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
#: ``--json`` of the commands that run a pass (generate, label, judge, filter): the summary.
SUMMARY_JSON_OPTION = typer.Option(False, "--json", help="Print the summary as JSON.")
#: ``--json`` of the commands that report one result (annotate push, pull; judges triage …).
RESULT_JSON_OPTION = typer.Option(False, "--json", help="Print the result as JSON.")
#: ``--seed`` of the simulations and statistics whose numbers a seed fixes (optional).
RANDOM_SEED_OPTION = typer.Option(None, "--seed", help="Random seed (same seed, same numbers).")
#: ``--concurrency``: model requests a pass keeps in flight.
CONCURRENCY_OPTION = typer.Option(16, "--concurrency", help="Requests in flight.")
#: ``--out``: the JSON-lines file an export writes (required).
JSONL_OUT_OPTION = typer.Option(..., "--out", help="Output .jsonl file.")
#: ``--allow-self-judging``: let the model under test judge, label or classify its own
#: answers (refused otherwise; the assignment is stored with the run, llm/roles.py).
ALLOW_SELF_JUDGING_OPTION = typer.Option(
    False,
    "--allow-self-judging",
    help="Let the model under test judge, label or classify its own answers (refused otherwise).",
)
#: ``--limit`` of the commands that print stored answers (``show``): how many.
SHOW_LIMIT_OPTION = typer.Option(
    10, "--limit", min=1, help="How many answers to print, in the run's order."
)
