"""Setting up a source-reliance run from the browser, and reading one back.

The Source reliance page is thin over these functions. Items are the shipped sample or a
file the researcher uploads, validated by the importer ``driftlens sources items`` uses
(errors name the uploaded file and its line) and kept in the workspace as our JSONL, so the
background job reads the very same items. The run is the CLI's own ``sources run``
(:func:`run_argv`), submitted as a background job: it stores every probe as it arrives,
resumes when run again and writes the run's own report folder (:func:`report_folder`).

Reading back: :func:`item_probes` is one item's probe variants with the letter
distribution and the top log-probabilities at the answer, from a stored run's records
(:func:`stored_records`) or a report folder's ``probes.jsonl`` (:func:`folder_records`).
Probe and reply texts are untrusted: pages show them in data frames only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from sqlmodel import Session

from llm.specs import ModelSpec
from storage.errors import InputError
from storage.yaml_input import decode_upload
from study.catalog.assertions import VOCABULARIES
from study.report.folder import folder_slug
from study.sources.items import MCQItem, items_to_jsonl, parse_items
from study.sources.sim.probe import SOURCE_PRESETS
from study.sources.store import load_sources_runs

ITEM_SUFFIXES: tuple[str, ...] = (".jsonl", ".json", ".csv")
#: The system-instruction variants (``--instruction``) with what each tells the model.
INSTRUCTION_NAMES: dict[str, str] = {
    "n": "no instruction (neutral)",
    "d": "rely on the document only",
    "u": "rely on the user only",
    "s": "rely on yourself only",
}
VOCABULARY_NAMES: tuple[str, ...] = tuple(VOCABULARIES)


def sim_presets() -> dict[str, str]:
    """The simulated source-reliance models (``sim/src-*``) → what each one does."""
    return {f"sim/{name}": p.description for name, p in SOURCE_PRESETS.items()}


def check_items_upload(filename: str, data: bytes, *, fmt: str = "auto") -> list[MCQItem]:
    """Validate an uploaded items file exactly as ``--items FILE`` would be read.

    Raises:
        InputError: not .jsonl/.json/.csv, not UTF-8, or an invalid record (the message
            names the file and the line).
    """
    if Path(filename).suffix.lower() not in ITEM_SUFFIXES:
        raise InputError(f"{filename}: items files must be .jsonl, .json or .csv.")
    text = decode_upload(data, filename=filename)
    return parse_items(text, source=filename, fmt=fmt)


def inputs_folder(workspace: Path, run: str) -> Path:
    """Where a run's uploaded items are kept (one folder per run)."""
    return workspace / "inputs" / "sources" / folder_slug(run)


def save_items(workspace: Path, run: str, filename: str, data: bytes, *, fmt: str = "auto") -> Path:
    """Validate an uploaded items file and keep it (as our JSONL) for ``run``.

    Raises:
        InputError: the file is not a valid items file (nothing is stored then).
    """
    items = check_items_upload(filename, data, fmt=fmt)
    folder = inputs_folder(workspace, run)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "items.jsonl"
    tmp = folder / ".items.jsonl.tmp"
    tmp.write_text(items_to_jsonl(items), encoding="utf-8")
    tmp.replace(target)
    return target


def report_folder(workspace: Path, run: str) -> Path:
    """The run's own report folder (``reports/sources/<run>``), never shared with another."""
    return workspace / "reports" / "sources" / folder_slug(run)


def run_argv(
    run: str,
    *,
    model: ModelSpec,
    items: Path | None,
    out: Path,
    limit: int | None = None,
    tiers: Sequence[int] = (1,),
    instructions: Sequence[str] = ("n",),
    vocabulary: str = "ours",
    logprobs: bool = True,
    prefill: bool = True,
    claims_set: str | None = None,
    bootstrap: int = 2000,
    seed: int = 0,
    concurrency: int = 8,
) -> list[str]:
    """``driftlens sources run …`` (probe, store, read letters, analyse, write the report).

    Raises:
        InputError: no instruction, an unknown instruction or vocabulary, tier 2 without a
            claim set, or a bad tier.
    """
    if not run.strip():
        raise InputError("Give the run a name.")
    if not instructions:
        raise InputError("Choose at least one system instruction.")
    bad = [i for i in instructions if i not in INSTRUCTION_NAMES]
    if bad:
        raise InputError(f"Unknown instruction {bad[0]!r}; use one of n, d, u, s.")
    if vocabulary not in VOCABULARY_NAMES:
        raise InputError(f"Unknown vocabulary {vocabulary!r}; use {', '.join(VOCABULARY_NAMES)}.")
    if not tiers or any(t not in (1, 2) for t in tiers):
        raise InputError("Assertion tiers are 1 and/or 2.")
    if 2 in tiers and not claims_set:
        raise InputError("Tier 2 needs a stored claim set (`driftlens sources claims`).")
    argv = ["sources", "run", "--model", str(model), "--run", run, "--out", str(out)]
    if items is not None:
        argv += ["--items", str(items)]
    if limit:
        argv += ["--limit", str(int(limit))]
    for t in sorted(set(tiers)):
        argv += ["--tier", str(t)]
    for i in dict.fromkeys(instructions):
        argv += ["--instruction", i]
    argv += ["--vocabulary", vocabulary, "--bootstrap", str(bootstrap), "--seed", str(seed)]
    argv += ["--concurrency", str(concurrency)]
    if not logprobs:
        argv.append("--no-logprobs")
    if not prefill:
        argv.append("--no-prefill")
    if claims_set:
        argv += ["--claims-set", claims_set]
    return argv


def stored_records(run: str, *, session: Session) -> list[dict[str, Any]]:
    """Every stored probe record of ``run`` (the ``probes.jsonl`` form) with its instruction.

    Raises:
        NotFoundError: no such run.
    """
    out = []
    for r in load_sources_runs(run, session=session):
        for rec in r.records:
            out.append({"instruction": r.config.instruction, **rec.to_json()})
    return out


def folder_records(folder: Path) -> list[dict[str, Any]]:
    """The probe records of a report folder's ``probes.jsonl`` (empty when it has none)."""
    path = folder / "probes.jsonl"
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(ln) for ln in lines if ln.strip()]


def record_items(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The item ids of probe records, in plan order."""
    return list(dict.fromkeys(str(r["item_id"]) for r in records))


def _top(top: object) -> str:
    """``[[" D", -0.33], …]`` → ``'D' -0.33 · 'A' -2.33`` (the raw tokens quoted)."""
    if not isinstance(top, list):
        return ""
    return " · ".join(f"{str(t[0]).strip()!r} {float(t[1]):.2f}" for t in top[:5])


def item_probes(records: Sequence[Mapping[str, Any]], item: str) -> pd.DataFrame:
    """One item's probe variants: the letter read, P(letter) for every option, top logprobs.

    Raises:
        InputError: no record of ``item``.
    """
    rows = [r for r in records if r["item_id"] == item]
    if not rows:
        raise InputError(f"No probes of item {item!r} here.")
    letters = sorted({k for r in rows for k in (r.get("probs") or {})})
    out = []
    for r in rows:
        probs = r.get("probs") or {}
        out.append(
            {
                "instruction": r.get("instruction", "n"),
                "tier": r["tier"],
                "variant": r["variant"],
                "correct": r["correct_choice"],
                "wrong": r["wrong_choice"],
                "choice": r["choice"],
                "read by": r["method"],
                **{f"P({k})": probs.get(k) for k in letters},
                "top logprobs": _top(r.get("top")),
                "reply": r.get("text") or "",
                "error": r.get("error") or "",
            }
        )
    return pd.DataFrame(out)


def records_jsonl(records: Sequence[Mapping[str, Any]]) -> bytes:
    """Probe records as ``probes.jsonl`` (every raw logprob and message kept)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
