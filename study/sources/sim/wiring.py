"""The source-reliance simulator wired to our prompts: which item, which assertions.

:func:`probe_parser` reads a rendered probe back (the inverse of
:class:`~study.catalog.assertions.AssertionContext`): the question block names the item,
and each assertion line before it gives a source and an option
(:func:`~study.catalog.assertions.parse_assertion`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from llm.sim.server import BackgroundServer, create_app
from llm.specs import ModelSpec
from llm.types import ChatBackend, ChatMessage
from study.catalog.assertions import INSTRUCTIONS, parse_assertion, system_prompt
from study.sources.items import MCQItem
from study.sources.sim.backend import ProbeParser, SourceRoute, SourceSimBackend
from study.sources.sim.probe import Probe

#: The source-reliance presets are the simulator presets named ``src-...``.
PRESET_PREFIX = "src-"


def probe_parser(items: Sequence[MCQItem]) -> ProbeParser:
    """A parser of rendered probes for these items (unknown questions give ``None``)."""
    # Keyed by the whole question block (question and options), all a model sees of an
    # item: keyed by the question text alone, items repeating a text (170 of an audit's
    # 500) were all answered as the last of them, and SDR+ read 0.55-0.61 for 0.87-0.90.
    by_block = {(it.question, tuple(it.choices)): it for it in items}
    by_system = {system_prompt(k): k for k in INSTRUCTIONS}

    def parse(messages: Sequence[ChatMessage]) -> Probe | None:
        user = next((m.content for m in reversed(messages) if m.role == "user"), "")
        lines = user.split("\n")
        at = next((i for i, ln in enumerate(lines) if ln.startswith("Question: ")), None)
        if at is None:
            return None
        options = []
        for k, ln in enumerate(lines[at + 1 :]):
            prefix = f"{chr(65 + k)}. "
            if not ln.startswith(prefix):
                break
            options.append(ln.removeprefix(prefix))
        item = by_block.get((lines[at].removeprefix("Question: "), tuple(options)))
        if item is None:
            return None
        said = []
        for ln in lines[:at]:
            if not ln.strip():
                continue
            got = parse_assertion(ln, item.choices)
            if got is None:
                return None
            said.append(got)
        system = next((m.content for m in messages if m.role == "system"), "")
        return Probe(
            key=item.id,
            n_choices=len(item.choices),
            gold=item.answer_index,
            assertions=tuple(said),
            instruction=by_system.get(system, "n"),
        )

    return parse


def backend_for(spec: ModelSpec, items: Sequence[MCQItem]) -> ChatBackend | ModelSpec:
    """The simulator for ``sim/src-*`` specs (it needs the items); other specs unchanged."""
    if spec.simulated and spec.model.startswith(PRESET_PREFIX):
        return SourceSimBackend(spec.model, parse_probe=probe_parser(items))
    return spec


@contextmanager
def serve_source_sim(items: Sequence[MCQItem], *, api_key: str) -> Iterator[str]:
    """Serve the ``src-*`` simulator over HTTP on 127.0.0.1 (yields the ``/v1`` base URL).

    Use it through the real client: ``openai-api/<service>/sim/src-paper`` with
    ``<SERVICE>_BASE_URL`` set to the yielded URL and ``<SERVICE>_API_KEY`` to ``api_key``.
    """
    app = create_app(api_key=api_key, model_routes=(SourceRoute(probe_parser(items)),))
    with BackgroundServer(app, path="/v1") as url:
        yield url
