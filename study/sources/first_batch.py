"""The logprobs check of a run's first answers, before any of them is stored.

Source reliance reads letters from the top-k logprobs at the answer position. An endpoint
that drops them (or caps ``top_logprobs``, or sends the prompt's positions) would leave
every probe ``unknown`` or read from the text without a word, and the report would bound a
shift of nothing. So the first :data:`FIRST_BATCH` answers of a run are held back, checked
with :func:`llm.logprobs.check_logprobs`, and the run stops in one sentence when they are not
usable; only text reading asked for explicitly (``--no-logprobs``) skips the check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from llm.logprobs import check_logprobs, logprobs_from_json
from storage.errors import ServiceError


class Answered(Protocol):
    """What the gate reads of a record (``study.sources.plan.ProbeRecord`` has it)."""

    @property
    def error(self) -> str | None: ...

    @property
    def text(self) -> str | None: ...

    @property
    def logprobs(self) -> list[dict[str, Any]] | None: ...


#: The record type passed through (the plan's records; the gate never imports the plan).
R = TypeVar("R", bound=Answered)

#: Answers held back and checked before the first one is passed on.
FIRST_BATCH = 8


class LogprobsUnusable(ServiceError):
    """The endpoint's logprobs cannot be read (none, too few alternatives, wrong positions)."""


class FirstBatchGate(Generic[R]):
    """Passes records on only once the first answers' logprobs were found usable.

    Args:
        spec: The model spec (named in the error).
        top_k: ``top_logprobs`` asked for.
        max_tokens: Tokens each answer may have.
        on_record: Where checked records go (``None``: nowhere).
        size: Answers checked before the gate opens.
    """

    def __init__(
        self,
        spec: str,
        *,
        top_k: int,
        max_tokens: int,
        on_record: Callable[[R], None] | None,
        size: int = FIRST_BATCH,
    ) -> None:
        self.spec = spec
        self.top_k = top_k
        self.max_tokens = max_tokens
        self.on_record = on_record
        self.size = size
        self.open = False
        self._held: list[R] = []

    def add(self, rec: R) -> None:
        """Hold ``rec`` while the gate is closed (checking once enough arrived), else pass it."""
        if self.open:
            self._pass(rec)
            return
        self._held.append(rec)
        if sum(r.error is None for r in self._held) >= self.size:
            self.check()

    def check(self) -> None:
        """Check what is held (also fewer than ``size`` at the end of a phase) and pass it.

        Raises:
            LogprobsUnusable: the held answers' logprobs are not usable; nothing is passed.
        """
        if self.open:
            return
        answered = [r for r in self._held if r.error is None]
        result = check_logprobs(
            ((r.text, logprobs_from_json(r.logprobs)) for r in answered),
            top_k=self.top_k,
            max_tokens=self.max_tokens,
        )
        if result.problem is not None:
            self._held.clear()
            raise LogprobsUnusable(
                f"{self.spec} {result.problem}; source reliance reads letters from them, so "
                "the run stopped with nothing stored (--no-logprobs reads letters from the "
                "text instead)."
            )
        if not answered:
            # only failed requests so far: they are stored as failures, the check waits
            self._flush()
            return
        self.open = True
        self._flush()

    def _flush(self) -> None:
        held, self._held = self._held, []
        for rec in held:
            self._pass(rec)

    def _pass(self, rec: R) -> None:
        if self.on_record is not None:
            self.on_record(rec)
