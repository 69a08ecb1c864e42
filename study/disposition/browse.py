"""Reading a disposition study back for the browser: its report folder, one stem, all answers.

* :func:`read_report` — the tables, figures and statistics files ``disposition analyze``
  wrote into the study's report folder (what the page shows is what the download holds).
* :func:`stem_answers` — one stem's answers across every arm: the probe, the answer, the
  classifier's verdicts (each judge and each repeat) and the re-asks it took.
* :func:`answers_frame` — every answer of a study with its first verdict, for download.

Answer, probe and verdict texts are untrusted model output: pages show them in data frames
or ``st.text`` only; CSV downloads guard them (``study.safe_csv``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from sqlmodel import Session, col, select

from storage.disposition_models import DispositionArm, DispositionResponse
from storage.errors import InputError
from storage.repo.disposition import require_arms, scores_for
from study.safe_csv import unguard_frame

#: The report's tables (``table_<name>.csv``), in the order the page shows them.
REPORT_TABLES: tuple[str, ...] = ("scorecard", "drift", "calibrated", "null_test", "noise")


@dataclass(frozen=True)
class DispositionReport:
    """What ``disposition analyze`` wrote into a study's report folder.

    Attributes:
        folder: The report folder.
        tables: ``name → table`` for each ``table_<name>.csv`` there.
        figures: ``name → PNG`` of each figure.
        stats: The statistics files (``stats_<group>.json``, ``awareness.json``).
        html: ``disposition.html``.
        simulated: Whether every arm is a simulated model.
    """

    folder: Path
    tables: dict[str, pd.DataFrame]
    figures: dict[str, Path]
    stats: dict[str, Path]
    html: Path
    simulated: bool
    arms: list[dict[str, Any]] = field(default_factory=list)


def read_report(folder: Path) -> DispositionReport | None:
    """The report in ``folder``, or ``None`` when the study was not analysed yet."""
    html = folder / "disposition.html"
    if not html.is_file():
        return None
    tables = {}
    for name in REPORT_TABLES:
        path = folder / f"table_{name}.csv"
        if path.is_file() and path.stat().st_size > 1:
            tables[name] = unguard_frame(pd.read_csv(path, keep_default_na=True))
    figures = {p.stem: p for p in sorted((folder / "figures").glob("*.png"))}
    stats = {p.stem: p for p in sorted(folder.glob("stats_*.json"))}
    if (folder / "awareness.json").is_file():
        stats["awareness"] = folder / "awareness.json"
    arms: list[dict[str, Any]] = []
    if (folder / "arms.json").is_file():
        arms = list(json.loads((folder / "arms.json").read_text(encoding="utf-8")).values())
    simulated = bool(arms) and all(
        str(a.get("model", "")).split("/")[-1].startswith("disp-") for a in arms
    )
    return DispositionReport(folder, tables, figures, stats, html, simulated, arms)


def stats_json(report: DispositionReport) -> bytes:
    """Every statistics file of a report in one JSON document (``{name: content}``)."""
    doc = {name: json.loads(p.read_text(encoding="utf-8")) for name, p in report.stats.items()}
    return (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode()


def _responses(arms: list[DispositionArm], session: Session, **where: str) -> list[Any]:
    stmt = select(DispositionResponse).where(
        col(DispositionResponse.arm_id).in_([a.id for a in arms])
    )
    for name, value in where.items():
        stmt = stmt.where(getattr(DispositionResponse, name) == value)
    return list(session.exec(stmt))


def study_stems(study: str, *, session: Session) -> list[str]:
    """``battery/stem`` of every stem the study has answers for (sorted).

    Raises:
        NotFoundError: the study has no arms.
    """
    arms = require_arms(study, session=session)
    stmt = (
        select(DispositionResponse.battery, DispositionResponse.stem)
        .where(col(DispositionResponse.arm_id).in_([a.id for a in arms]))
        .distinct()
    )
    return sorted(f"{b}/{s}" for b, s in session.exec(stmt))


def _verdicts(ids: list[int], session: Session) -> dict[int, list[str]]:
    """``response id → ["judge: label", …]`` (repeats marked ``#2``), in a stable order."""
    out: dict[int, list[str]] = defaultdict(list)
    rows = sorted(scores_for(ids, session=session), key=lambda s: (s.judge_model, s.repeat))
    for s in rows:
        label = s.label or f"unparsed ({s.parse_status})"
        again = f" #{s.repeat + 1}" if s.repeat else ""
        out[s.response_id].append(f"{s.judge_model}{again}: {label}")
    return out


def stem_answers(study: str, stem: str, *, session: Session) -> pd.DataFrame:
    """One stem's answers across the arms (``stem`` is ``battery/stem``).

    Columns: arm, role, dose, reasoning, paraphrase, sample, probe, answer, verdicts (every
    classifier label, repeats included), attempts (1 + re-asks), exhausted attempts, status.

    Raises:
        NotFoundError: the study has no arms.
        InputError: ``stem`` is not ``battery/stem`` or has no answers in the study.
    """
    battery, sep, stem_id = stem.partition("/")
    if not sep:
        raise InputError(f"A stem is named battery/stem, not {stem!r}.")
    arms = require_arms(study, session=session)
    by_id = {a.id: a for a in arms}
    rows = _responses(arms, session, battery=battery, stem=stem_id)
    if not rows:
        raise InputError(f"Study {study!r} has no answers for stem {stem!r}.")
    verdicts = _verdicts([r.id for r in rows if r.id is not None], session)
    order = {a.id: i for i, a in enumerate(arms)}
    rows.sort(key=lambda r: (order[r.arm_id], r.paraphrase, r.sample))
    out = []
    for r in rows:
        arm = by_id[r.arm_id]
        out.append(
            {
                "arm": arm.name,
                "role": arm.role,
                "dose": arm.dose,
                "reasoning": arm.reasoning + (f":{arm.budget}" if arm.budget is not None else ""),
                "paraphrase": r.paraphrase,
                "sample": r.sample,
                "probe": r.probe_text,
                "answer": r.answer if r.answer is not None else "",
                "verdicts": "; ".join(verdicts.get(r.id or -1, [])) or "not classified",
                "attempts": r.attempts,
                "re-asks": max(r.attempts - 1, 0),
                "exhausted attempts": r.exhausted_attempts,
                "status": r.status,
            }
        )
    return pd.DataFrame(out)


def stem_summary(answers: pd.DataFrame) -> str:
    """One line on a stem's answers: how many, from how many arms, re-asks, verdict counts."""
    if answers.empty:
        return "No answers."
    verdicts: dict[str, int] = {}
    for text in answers["verdicts"]:
        for part in str(text).split("; "):
            label = part.rpartition(": ")[2]
            verdicts[label] = verdicts.get(label, 0) + 1
    counts = ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items()))
    return (
        f"{len(answers)} answers from {answers['arm'].nunique()} arm(s); "
        f"{int(answers['re-asks'].sum())} re-asks; verdicts: {counts}."
    )


def answers_frame(study: str, *, session: Session) -> pd.DataFrame:
    """Every answer of a study with its verdicts (one row per arm × probe × sample).

    Raises:
        NotFoundError: the study has no arms.
    """
    arms = require_arms(study, session=session)
    by_id = {a.id: a for a in arms}
    rows = _responses(arms, session)
    verdicts = _verdicts([r.id for r in rows if r.id is not None], session)
    return pd.DataFrame(
        [
            {
                "study": study,
                "arm": by_id[r.arm_id].name,
                "model": by_id[r.arm_id].model,
                "battery": r.battery,
                "stem": r.stem,
                "paraphrase": r.paraphrase,
                "sample": r.sample,
                "probe": r.probe_text,
                "text": r.text,
                "answer": r.answer,
                "status": r.status,
                "attempts": r.attempts,
                "exhausted_attempts": r.exhausted_attempts,
                "verdicts": "; ".join(verdicts.get(r.id or -1, [])),
            }
            for r in sorted(rows, key=lambda r: (r.arm_id, r.battery, r.stem, r.paraphrase))
        ],
        columns=[
            "study", "arm", "model", "battery", "stem", "paraphrase", "sample", "probe",
            "text", "answer", "status", "attempts", "exhausted_attempts", "verdicts",
        ],
    )  # fmt: skip
