"""The simulated LLM behind a real Mem0 memory system (the conflicts pipeline track).

Mem0 (``mem0ai``) needs an LLM that extracts memories from conversation turns and an
embedding model, both reached through the OpenAI API, so the served simulator answers
them: :func:`mem0_extraction_answerer` answers Mem0's additive extraction prompt (its
system message opens with the "Memory Extractor" role) with one memory per *user* line
of the "New Messages" section, copied verbatim — a perfectly literal extractor — and the
generic server's ``/v1/embeddings`` (:mod:`llm.sim.embeddings`) gives the vectors. The
memory system's own machinery (embedding, de-duplication, its ADD-only resolution rule,
the vector store) is real; only the language model is simulated.
"""

from __future__ import annotations

import json

from llm.sim.tasks import Answerer, Messages

#: The phrase that identifies Mem0's additive extraction system prompt.
MEM0_EXTRACTOR_SIGNATURE = "You are a Memory Extractor"


def new_user_lines(prompt: str) -> list[str]:
    """The user lines of the "## New Messages" section of a Mem0 extraction prompt."""
    _, sep, rest = prompt.partition("## New Messages\n")
    if not sep:
        return []
    section = rest.split("\n## ", 1)[0]
    return [
        ln.removeprefix("user: ").strip() for ln in section.splitlines() if ln.startswith("user: ")
    ]


def mem0_extraction_answerer() -> Answerer:
    """An answerer for Mem0's extraction prompt (``None`` for every other request)."""

    def answer(messages: Messages, seed: int | None, sample_index: int) -> str | None:
        system = next((c for r, c in messages if r == "system"), "")
        if MEM0_EXTRACTOR_SIGNATURE not in system:
            return None
        user = next((c for r, c in messages if r == "user"), "")
        memories = [{"text": line} for line in new_user_lines(user) if line]
        return json.dumps({"memory": memories})

    return answer
