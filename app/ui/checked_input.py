"""Boxes of a launch form whose value is checked before anything starts (numbers, run names).

Streamlit's ``number_input`` with ``min_value``/``max_value`` keeps a value typed outside
its range in a red box *in the browser only*: the script goes on with the previous value,
so a job started then ran with a number the researcher had not asked for (``10⁹`` samples
typed, ``--samples 2`` run) and nothing said so. These boxes have no range in the browser:
the typed value always reaches the page, is checked here, and an out-of-range one shows
one sentence under the box while the form's button stays disabled (:attr:`FormCheck.ok`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from app.ui.safe import plain_message


def _num(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:g}"


def range_problem(label: str, value: float | None, low: float, high: float) -> str | None:
    """The one sentence on a value outside ``[low, high]``, or ``None`` when it lies inside."""
    if value is not None and low <= value <= high:
        return None
    shown = "nothing" if value is None else _num(value)
    return f"{label} must lie in {_num(low)}..{_num(high)}, not {shown}."


@dataclass
class FormCheck:
    """The checked boxes of one launch form: the button is enabled only when all are valid.

    Attributes:
        problems: One sentence per box whose value is refused.
    """

    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every checked value is valid (the form's button may start its work)."""
        return not self.problems

    @property
    def why(self) -> str | None:
        """The button's help while it is disabled by a refused value, else ``None``."""
        return None if self.ok else "Correct the value marked in red first."

    def number(
        self,
        label: str,
        *,
        low: float,
        high: float,
        value: float,
        key: str,
        where: Any = None,
        step: float | None = None,
        help: str | None = None,
    ) -> Any:
        """A number box whose value must lie in ``[low, high]``.

        Integers in, integers out (``value``, ``low`` and ``high`` all ``int``); else floats.

        Args:
            label: The box's label (the sentence names it).
            low: Smallest value accepted.
            high: Largest value accepted.
            value: The default.
            key: The widget key.
            where: The container or column to draw into (default: the page).
            step: The box's step (default: 1 for integers).
            help: The box's tooltip.

        Returns:
            The typed value, or ``value`` (the default) while the typed one is refused:
            the caller never sees a refused value, and the button is disabled then.
        """
        target = where if where is not None else st
        integer = all(isinstance(x, int) for x in (low, high, value))
        kwargs: dict[str, Any] = {"value": value, "key": key, "help": help}
        kwargs["step"] = step if step is not None else (1 if integer else None)
        typed = target.number_input(label, **kwargs)
        problem = range_problem(label, typed, low, high)
        if problem is None:
            return int(typed) if integer else float(typed)
        self.problems.append(problem)
        target.error(plain_message(problem))
        return value

    def run_name(
        self, label: str, value: str, *, key: str, where: Any = None, help: str | None = None
    ) -> str:
        """A run-name box checked as the services check it (:func:`check_run_name`).

        An empty name or one with a comma is said in one sentence under the box and keeps
        the form's button disabled, before anything is started (the job would refuse it).

        Returns:
            The typed name without its outer spaces (as the start code uses it).
        """
        from storage.errors import DriftLensError
        from storage.repo.runs import check_run_name

        target = where if where is not None else st
        name = str(target.text_input(label, value, key=key, help=help)).strip()
        problem: str | None = None
        try:
            check_run_name(name)
        except DriftLensError as exc:
            problem = str(exc)
        if problem is not None:
            self.problems.append(problem)
            target.error(plain_message(problem))  # echoes typed input: plain text
        return name
