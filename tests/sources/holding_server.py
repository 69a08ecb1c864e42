"""The ``src-*`` simulator over HTTP, counting requests per probe and able to hold answers.

After ``answer_first`` answers every further request waits until :meth:`release`, so a
test can kill a client while requests are in flight at a point it chooses, without timing.
Requests are counted by (last user message, seed): one key per probe of a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from study.sources.items import MCQItem
from study.sources.sim.backend import SourceRoute
from study.sources.sim.wiring import probe_parser
from tests.study.counting_server import CountingServer


class HoldingSourceServer(CountingServer):
    """``with HoldingSourceServer(items, answer_first=N) as url`` (url ends in ``/v1``).

    The counting and holding are :class:`~tests.study.counting_server.CountingServer`'s;
    the answers are the ``src-*`` simulator's.
    """

    def __init__(self, items: Sequence[MCQItem], *, answer_first: int | None = None) -> None:
        self._route = SourceRoute(probe_parser(items))
        super().__init__(answer_first=answer_first)

    def answer(self, body: dict[str, Any], user: str) -> dict[str, Any]:
        answer = self._route(str(body.get("model", "")), body)
        assert answer is not None, "only src-* models are served here"
        return answer
