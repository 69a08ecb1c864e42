"""Memory systems: something that ingests conversation turns and stores memories.

:class:`MemorySystem` is the small protocol the conflicts pipeline track drives (through
:class:`study.conflicts.tracks.MemorySystemExtractor`): ``add`` one window of turns for a
user, then read back every stored memory with ``memories``.

:class:`Mem0System` adapts Mem0 (``pip install mem0ai``, imported lazily): its LLM and
embedder are the OpenAI-compatible endpoint you name (a real provider, vLLM, or the
workbench simulator, which answers Mem0's extraction prompt and serves ``/v1/embeddings``),
its vector store a local Qdrant folder and its history a local SQLite file, so nothing
leaves the machine when the endpoint is local. Mem0's telemetry is switched off.

Letta is not adapted: the PyPI package ``letta`` (0.34.x) is *Letta Code*, a terminal
coding agent with a bundled Node.js runtime, not the memory server; the server's agents
manage memory through tool calls, which the simulator does not serve (docs/conflicts.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from storage.errors import ConfigError, ServiceError


@runtime_checkable
class MemorySystem(Protocol):
    """A memory store fed with conversation turns."""

    @property
    def name(self) -> str:
        """The system's name (``--system``)."""
        ...

    @property
    def resolution_rule(self) -> str:
        """How it resolves a contradiction: ``add-both``, ``latest-wins`` or ``delete``."""
        ...

    def add(self, turns: Sequence[tuple[str, str]], *, user_id: str) -> None:
        """Ingest one window of ``(role, text)`` turns for a user."""
        ...

    def memories(self, *, user_id: str) -> list[str]:
        """Every memory stored for the user."""
        ...


def import_mem0_memory() -> Any:
    """Mem0's ``Memory`` class, imported with its telemetry switched off.

    Mem0 reads ``MEM0_TELEMETRY`` once, when it is first imported, so every import of mem0
    in the workbench goes through here.

    Raises:
        ConfigError: ``mem0ai`` is not installed.
    """
    os.environ["MEM0_TELEMETRY"] = "False"
    try:
        from mem0 import Memory
    except ImportError:
        raise ConfigError(
            "The mem0 memory system needs the mem0ai package: pip install mem0ai."
        ) from None
    return Memory


@dataclass
class Mem0System:
    """Mem0 over an OpenAI-compatible endpoint, with a local Qdrant and SQLite history.

    Args:
        base_url: The endpoint's ``/v1`` URL (LLM and embeddings).
        api_key: Its key (from the environment of the caller; never stored).
        model: The chat model Mem0 extracts memories with.
        store: Folder for the Qdrant collection and the history database.
        embedding_model: The embedding model name sent to the endpoint.
        embedding_dims: Vector size.
    """

    base_url: str
    api_key: str
    model: str
    store: Path
    embedding_model: str = "sim-embedding"
    embedding_dims: int = 256
    name: str = "mem0"
    # Mem0 v3 extracts ADD-only: both sides of a contradiction stay stored.
    resolution_rule: str = "add-both"

    def __post_init__(self) -> None:
        memory_class = import_mem0_memory()
        self.store.mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {
            "llm": {
                "provider": "openai",
                "config": {
                    "model": self.model,
                    "openai_base_url": self.base_url,
                    "api_key": self.api_key,
                    "temperature": 0.0,
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {
                    "model": self.embedding_model,
                    "openai_base_url": self.base_url,
                    "api_key": self.api_key,
                    "embedding_dims": self.embedding_dims,
                },
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "path": str(self.store / "qdrant"),
                    "collection_name": "driftlens",
                    "embedding_model_dims": self.embedding_dims,
                    "on_disk": True,
                },
            },
            "history_db_path": str(self.store / "history.db"),
        }
        try:
            self._memory = memory_class.from_config(config)
        except Exception as exc:  # mem0 raises many kinds; one sentence for the user
            raise ServiceError(f"Mem0 could not start: {type(exc).__name__}: {exc}") from None

    def add(self, turns: Sequence[tuple[str, str]], *, user_id: str) -> None:
        """Ingest one window of turns (Mem0's own extraction, embedding and storage)."""
        messages = [{"role": r, "content": t} for r, t in turns if r in ("user", "assistant")]
        try:
            self._memory.add(messages, user_id=user_id)
        except Exception as exc:
            raise ServiceError(
                f"Mem0 could not add memories: {type(exc).__name__}: {exc}"
            ) from None

    def memories(self, *, user_id: str) -> list[str]:
        """Every memory Mem0 stored for the user."""
        out = self._memory.get_all(filters={"user_id": user_id}, top_k=1000)
        rows = out.get("results", []) if isinstance(out, dict) else out
        return [str(r.get("memory", "")) for r in rows if r.get("memory")]
