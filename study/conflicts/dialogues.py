"""Multi-session dialogues: the pipeline track's input, with the known truth of each turn.

One JSON object per line::

    {"version": 1, "dialogue_id": "dlg_p01_meal_planning", "instance_id": "p01_meal_planning",
     "sessions": [{"turns": [
        {"role": "user", "text": "...", "states": [0], "revises": []},
        {"role": "assistant", "text": "..."}, ...]}, ...]}

A dialogue is the history a memory system would ingest for one bank instance: sessions of
user and assistant turns. Facts enter only through user turns; ``states`` lists the core
memories (indices into the instance's ``core_memories``) that a turn conveys, and
``revises`` the earlier facts that a later turn appears to overturn (the next phase of an
oscillation, the other context, the other source) — which a contradiction-resolving memory
system may delete. Sessions without ``states`` are filler. The annotations are the known
truth the extracted bank is labelled against (FULL / PARTIAL / None); a memory system
reads only the text.

The validator reports every problem with its line number: an unknown instance, an index
outside the instance's core memories, a core memory no user turn states, a fact stated by
an assistant turn, a turn revising a fact that was not stated before it, empty text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from storage.errors import InputError
from study.conflicts.items import ConflictInstance

SAMPLE_FILE = "sample_dialogues.jsonl"


class Turn(BaseModel):
    """One turn; ``states``/``revises`` are the truth annotations (user turns only)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    text: str = Field(min_length=1)
    states: tuple[int, ...] = ()
    revises: tuple[int, ...] = ()


class DialogueSession(BaseModel):
    """One conversation session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turns: tuple[Turn, ...] = Field(min_length=1)


class Dialogue(BaseModel):
    """The multi-session history of one bank instance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    dialogue_id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    instance_id: str = Field(min_length=1)
    sessions: tuple[DialogueSession, ...] = Field(min_length=1)

    def stated(self) -> set[int]:
        """Every core-memory index some user turn states."""
        return {i for s in self.sessions for t in s.turns for i in t.states}


def dialogue_problems(d: Dialogue, inst: ConflictInstance | None) -> list[str]:
    """What is wrong with one dialogue given its instance (empty when it is fine)."""
    if inst is None:
        return [f"instance {d.instance_id!r} is not among the banks"]
    n = len(inst.core_memories)
    out: list[str] = []
    seen: set[int] = set()
    for si, s in enumerate(d.sessions, start=1):
        for ti, t in enumerate(s.turns, start=1):
            where = f"session {si} turn {ti}"
            if t.role == "assistant" and (t.states or t.revises):
                out.append(f"{where}: an assistant turn may not state or revise user facts")
            bad = [i for i in (*t.states, *t.revises) if not 0 <= i < n]
            if bad:
                out.append(f"{where}: index {bad[0]} is outside the {n} core memories")
            early = [i for i in t.revises if i not in seen and 0 <= i < n]
            if early:
                out.append(f"{where}: revises fact {early[0]} before any turn stated it")
            seen.update(t.states)
    missing = sorted(set(range(n)) - d.stated())
    if missing:
        out.append(f"core memories {missing} are stated by no user turn")
    return out


@dataclass(frozen=True)
class DialogueSet:
    """Validated dialogues keyed by instance id, and where they came from."""

    source: str
    by_instance: Mapping[str, Dialogue]


def read_dialogues(path: Path | None, instances: Iterable[ConflictInstance]) -> DialogueSet:
    """Read and validate a dialogue file (``None``: the shipped sample).

    Raises:
        InputError: every problem, one per line with its line number.
    """
    if path is None:
        text = resources.files("study.conflicts.data").joinpath(SAMPLE_FILE).read_text("utf-8")
        source = f"sample:{SAMPLE_FILE}"
    else:
        try:
            text = path.read_text("utf-8")
        except FileNotFoundError:
            raise InputError(f"No dialogue file {path}.") from None
        except UnicodeDecodeError:
            raise InputError(f"{path} is not UTF-8 text.") from None
        source = str(path)
    known = {i.instance_id: i for i in instances}
    problems: list[str] = []
    out: dict[str, Dialogue] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            d = Dialogue.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            problems.append(f"{source} line {lineno}: not JSON ({exc.msg}).")
            continue
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err.get("loc", ()))
            problems.append(f"{source} line {lineno}: {loc}: {err.get('msg')}.")
            continue
        for p in dialogue_problems(d, known.get(d.instance_id)):
            problems.append(f"{source} line {lineno} ({d.dialogue_id}): {p}.")
        if d.instance_id in out:
            problems.append(f"{source} line {lineno}: a second dialogue for {d.instance_id!r}.")
        out[d.instance_id] = d
    if problems:
        raise InputError(" ".join(problems[:20]))
    return DialogueSet(source, out)
