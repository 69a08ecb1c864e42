"""Real memory systems on the pipeline track: Mem0 reading the dialogues.

``driftlens conflicts generate --track pipeline --system mem0`` feeds every instance's
dialogue to the real Mem0 package (:class:`llm.memory_systems.Mem0System`, through
:class:`study.conflicts.tracks.MemorySystemExtractor`) and shows the model what Mem0
stored. Mem0 needs a language model (to extract memories) and an embedder, both reached
over an OpenAI-compatible API:

* ``--memory-model sim/<preset>`` (the default, ``sim/default``) starts the workbench
  simulator as a local server for the duration of the extraction — it answers Mem0's
  extraction prompt literally and serves deterministic embeddings, so the track runs
  offline;
* ``--memory-model openai-api/<service>/<model>`` (or ``openai/<model>``) uses that
  endpoint, with its URL and key from the environment as for any model, and
  ``--memory-embedding-model`` names its embedding model.

Mem0's store (a local Qdrant folder and its SQLite history) lives in a temporary folder
that is removed afterwards; what Mem0 kept is recorded with every answer. With a
deterministic extractor a rerun rebuilds the same banks and the same prompts (the
memories are ordered by the dialogue turn they came from).
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from llm.memory_systems import Mem0System, import_mem0_memory
from llm.specs import ModelSpec, parse_spec, resolve_endpoint
from storage.errors import ConfigError
from study.conflicts.tracks import MemorySystemExtractor

#: Memory systems that run as real packages (not simulated extractors).
REAL_SYSTEMS: tuple[str, ...] = ("mem0",)
DEFAULT_MEMORY_MODEL = parse_spec("sim/default")
DEFAULT_EMBEDDING_MODEL = "sim-embedding"


@contextmanager
def open_real_extractor(
    name: str,
    *,
    memory_model: ModelSpec = DEFAULT_MEMORY_MODEL,
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    window: int = 5,
) -> Iterator[MemorySystemExtractor]:
    """A real memory system ready to read dialogues, for the duration of the block.

    Args:
        name: The system (``mem0``).
        memory_model: The parsed model spec Mem0 extracts memories with.
        embedding_model: The embedding model name sent to the same endpoint.
        window: Adjacent sessions fed per ``add``.

    Raises:
        ConfigError: unknown system, ``mem0ai`` not installed, or an endpoint that is not
            OpenAI-compatible or lacks its environment variables.
    """
    if name not in REAL_SYSTEMS:
        raise ConfigError(f"Unknown real memory system {name!r}; available: mem0.")
    import_mem0_memory()  # fail with one sentence before any server starts
    info = memory_model
    with ExitStack() as stack:
        if info.simulated:
            from study.sim_endpoint import SimProcess

            api_key = secrets.token_urlsafe(16)  # this server's own key, never shown
            base_url = stack.enter_context(SimProcess(api_key=api_key))
            model = info.spec
        else:
            endpoint = resolve_endpoint(info)
            base_url, api_key, model = endpoint.base_url, endpoint.api_key or "", info.model
        store = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="driftlens-mem0-")))
        system = Mem0System(
            base_url=base_url,
            api_key=api_key,
            model=model,
            store=store,
            embedding_model=embedding_model,
        )
        yield MemorySystemExtractor(system, window=window)
