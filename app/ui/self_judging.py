"""The "model under test may grade itself" checkbox of every page that starts a labeling,
judging or classifying job.

A grading role played by the model under test is refused in one line unless the command
gets ``--allow-self-judging`` (:mod:`llm.roles`); a page's job is that command, so each
page that starts one offers this box and adds the flag through :func:`self_judging_argv`.
The refusal itself then reaches the page as the job's one-line error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from llm.roles import SELF_JUDGING_FLAG

#: The command-line flag the box stands for.
FLAG = SELF_JUDGING_FLAG
#: The box's label (one for every page, so a user reads the same words everywhere).
LABEL = "Allow self-judging: the model under test may grade its own answers"
HELP = (
    "Off (the default): a judge, labeler or classifier that is the model whose answers are "
    "studied is refused in one line. On: allowed, and stored with the run as self-judging."
)


def self_judging_argv(argv: Sequence[str], allowed: bool) -> list[str]:
    """``argv`` with :data:`FLAG` appended when ``allowed`` (once; never twice)."""
    out = list(argv)
    if allowed and FLAG not in out:
        out.append(FLAG)
    return out


def self_judging_checkbox(*, key: str, where: Any = None) -> bool:
    """Draw the box (unticked by default) in ``where`` (default the page); return its value."""
    target = st if where is None else where
    return bool(target.checkbox(LABEL, value=False, key=key, help=HELP))
