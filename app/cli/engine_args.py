"""``--engine-arg KEY=VALUE``: vLLM engine arguments for commands that may run ``vllm/<model>``.

The labelers and judges of a command build their backends deep inside the services, from
spec strings; the engine arguments reach them through the one place every in-process vLLM
backend reads, :data:`llm.vllm_engine.ENGINE_ARGS_ENV`, which this front end sets for its
own process (the pairs given on the command line win over what the variable already held).
"""

from __future__ import annotations

import os

import typer

from llm.vllm_engine import ENGINE_ARGS_ENV, merge_engine_args

ENGINE_ARG_HELP = (
    "vLLM engine argument KEY=VALUE for vllm/<model> specs (repeatable; JSON values, e.g. "
    f"max_model_len=4096 or dtype=bfloat16); added to ${ENGINE_ARGS_ENV}."
)


def engine_arg_option() -> list[str] | None:
    """The ``--engine-arg`` option (repeatable)."""
    option: list[str] | None = typer.Option(
        None, "--engine-arg", metavar="KEY=VALUE", help=ENGINE_ARG_HELP
    )
    return option


def apply_engine_args(pairs: list[str] | None) -> None:
    """Validate the pairs and merge them into this process's engine-argument variable.

    Raises:
        ConfigError: For a pair that is not ``KEY=VALUE`` or an invalid variable.
    """
    if pairs:
        os.environ[ENGINE_ARGS_ENV] = merge_engine_args(pairs)
