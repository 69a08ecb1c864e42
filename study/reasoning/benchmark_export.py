"""Export the curated benchmark (SPEC §2): JSONL, Parquet and a datasheet, from stored data.

Tier selection: ``core`` exports core questions; ``relaxed`` exports core and relaxed ones
(unanimity implies the 2-of-3 rule, so the relaxed benchmark contains the core one, as in
the published 422 core / 1,061 relaxed split); ``all`` exports every stored question,
candidates and rejected ones included, with their tier (``null`` when unverified).

Every record holds the question, its tier and domains, the LLM filter's verdict, and per
verification criterion the human vote counts, the 2-of-3 label, unanimity and pairwise
agreement (annotator identities are not exported). ``datasheet.md`` describes the export:
composition, how it was built, filter results, per-criterion votes and agreement
(with Krippendorff's α), the fields, and a licence note. Files are written atomically.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session

from annotation.aggregate import decide
from driftlens_core.agreement import krippendorff_alpha
from storage.errors import InputError
from storage.models import CurationVote, Question
from storage.repo.annotations import votes_for_questions
from storage.repo.questions import list_questions
from storage.types import utcnow
from study.questions import DOMAINS, SAMPLE_SOURCE
from study.reasoning.human.curation import PERSONA_CRITERION
from study.reasoning.human.curation import SPECS as CURATION_SPECS

TIER_SELECTIONS: tuple[str, ...] = ("core", "relaxed", "all")
JSONL_NAME, PARQUET_NAME, DATASHEET_NAME = "benchmark.jsonl", "benchmark.parquet", "datasheet.md"
EXPORT_VERSION = 1

#: Fields of every record, in order (``votes`` is a list of per-criterion objects).
RECORD_FIELDS: tuple[str, ...] = (
    "id",
    "text",
    "source",
    "tier",
    "domains",
    "filter_label",
    "filter_reason",
    "filter_domains",
    "filter_model",
    "filter_error",
    "votes",
)
VOTE_FIELDS: tuple[str, ...] = (
    "criterion",
    "passing",
    "yes",
    "no",
    "unsure",
    "n",
    "label",
    "passed",
    "unanimous",
    "agreement",
)


@dataclass(frozen=True)
class CriterionStats:
    """Votes and agreement on one verification criterion over the exported questions."""

    criterion: str
    passing: str | None
    questions: int
    votes: dict[str, int]
    passed: int
    unanimous: int
    mean_agreement: float | None
    alpha: float | None


@dataclass(frozen=True)
class BenchmarkExport:
    """What :func:`export_benchmark` wrote."""

    out_dir: Path
    tier: str
    questions: int
    files: tuple[Path, ...]
    tiers: dict[str, int] = field(default_factory=dict)
    domains: dict[str, int] = field(default_factory=dict)
    criteria: tuple[CriterionStats, ...] = ()


def passing_value(criterion: str) -> str | None:
    """The answer a good benchmark question gets on a criterion (``None``: not a tier rule)."""
    for q in CURATION_SPECS["question_checks"].agreement_questions:
        if q.name == criterion:
            return q.passing
    if criterion.startswith(PERSONA_CRITERION):
        return CURATION_SPECS["persona_pair"].agreement_questions[0].passing
    return None


def pairwise_share(values: Sequence[str]) -> float | None:
    """Share of annotator pairs that gave the same answer (``None`` under two votes)."""
    pairs = list(itertools.combinations(values, 2))
    if not pairs:
        return None
    return sum(a == b for a, b in pairs) / len(pairs)


def criterion_record(criterion: str, votes: Sequence[CurationVote]) -> dict[str, Any]:
    """The exported summary of one question's votes on one criterion."""
    values = [v.vote for v in sorted(votes, key=lambda v: v.annotator)]
    counts = Counter(values)
    outcome = decide(values)
    passing = passing_value(criterion)
    return {
        "criterion": criterion,
        "passing": passing,
        "yes": counts.get("yes", 0),
        "no": counts.get("no", 0),
        "unsure": counts.get("unsure", 0),
        "n": len(values),
        "label": outcome.label,
        "passed": None if passing is None else outcome.label == passing,
        "unanimous": outcome.unanimous,
        "agreement": pairwise_share(values),
    }


def question_record(q: Question, votes: Sequence[CurationVote]) -> dict[str, Any]:
    """One exported benchmark record (see :data:`RECORD_FIELDS`)."""
    by_criterion: dict[str, list[CurationVote]] = {}
    for v in votes:
        by_criterion.setdefault(v.criterion, []).append(v)
    return {
        "id": q.external_id,
        "text": q.text,
        "source": q.source,
        "tier": q.tier,
        # Curated domains win; the filter's are the fallback for questions imported bare.
        "domains": list(q.domains or q.filter_domains or []),
        "filter_label": q.filter_label,
        "filter_reason": q.filter_reason,
        "filter_domains": list(q.filter_domains) if q.filter_domains is not None else None,
        "filter_model": q.filter_model,
        "filter_error": q.filter_error,
        "votes": [criterion_record(c, by_criterion[c]) for c in sorted(by_criterion)],
    }


def select_questions(tier: str, *, session: Session) -> list[Question]:
    """The questions of a tier selection (see the module docstring).

    Raises:
        InputError: Unknown tier selection.
    """
    if tier not in TIER_SELECTIONS:
        raise InputError(f"Unknown tier {tier!r}: use core, relaxed or all.")
    if tier == "all":
        return list_questions(session=session)
    tiers = ("core",) if tier == "core" else ("core", "relaxed")
    return list_questions(session=session, tier=tiers)


def criterion_stats(
    records: Sequence[dict[str, Any]], votes: dict[int, list[CurationVote]]
) -> tuple[CriterionStats, ...]:
    """Per-criterion totals over the exported records, with Krippendorff's α (nominal)."""
    names = sorted({v["criterion"] for r in records for v in r["votes"]})
    out: list[CriterionStats] = []
    for name in names:
        rows = [v for r in records for v in r["votes"] if v["criterion"] == name]
        agreements = [v["agreement"] for v in rows if v["agreement"] is not None]
        # α over questions × annotators: who voted what on which question.
        annotators: dict[str, dict[int, str]] = {}
        for qid, qvotes in votes.items():
            for v in qvotes:
                if v.criterion == name:
                    annotators.setdefault(v.annotator, {})[qid] = v.vote
        items = sorted(votes)
        matrix = [[by_q.get(i) for i in items] for by_q in annotators.values()]
        alpha = krippendorff_alpha(matrix) if len(matrix) >= 2 else float("nan")
        out.append(
            CriterionStats(
                criterion=name,
                passing=rows[0]["passing"] if rows else None,
                questions=len(rows),
                votes={k: sum(v[k] for v in rows) for k in ("yes", "no", "unsure")},
                passed=sum(1 for v in rows if v["passed"]),
                unanimous=sum(1 for v in rows if v["unanimous"]),
                mean_agreement=sum(agreements) / len(agreements) if agreements else None,
                alpha=None if math.isnan(alpha) else float(alpha),
            )
        )
    return tuple(out)


def _write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _parquet_schema() -> Any:
    import pyarrow as pa

    vote = pa.struct(
        [
            ("criterion", pa.string()),
            ("passing", pa.string()),
            ("yes", pa.int32()),
            ("no", pa.int32()),
            ("unsure", pa.int32()),
            ("n", pa.int32()),
            ("label", pa.string()),
            ("passed", pa.bool_()),
            ("unanimous", pa.bool_()),
            ("agreement", pa.float64()),
        ]
    )
    return pa.schema(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("source", pa.string()),
            ("tier", pa.string()),
            ("domains", pa.list_(pa.string())),
            ("filter_label", pa.string()),
            ("filter_reason", pa.string()),
            ("filter_domains", pa.list_(pa.string())),
            ("filter_model", pa.string()),
            ("filter_error", pa.string()),
            ("votes", pa.list_(vote)),
        ]
    )


def _md(text: object) -> str:
    """Make stored text inert in Markdown: HTML escaped, Markdown syntax backslashed."""
    s = " ".join(str(text).split())
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for ch in "\\`*_[]|#!":
        s = s.replace(ch, "\\" + ch)
    return s


def _fmt(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def render_datasheet(
    tier: str,
    records: Sequence[dict[str, Any]],
    criteria: Sequence[CriterionStats],
    *,
    workspace_questions: Sequence[Question],
    generated_at: str,
) -> str:
    """The datasheet text (Markdown) of one export; every number comes from the records."""
    n = len(records)
    tiers = Counter(r["tier"] or "unverified" for r in records)
    domains = Counter(d for r in records for d in r["domains"])
    sources = Counter(r["source"] or "unknown" for r in records)
    filt = Counter(
        "error" if r["filter_error"] else (r["filter_label"] or "not filtered") for r in records
    )
    ws_filt = Counter(
        "error" if q.filter_error else (q.filter_label or "not filtered")
        for q in workspace_questions
    )
    models = Counter(r["filter_model"] for r in records if r["filter_model"])
    ws_tiers = Counter(q.tier or "unverified" for q in workspace_questions)
    scope = {
        "core": "core questions only (all three annotators agree on every criterion)",
        "relaxed": "core and relaxed questions (two of three annotators agree on every criterion)",
        "all": "every stored question, including unverified and rejected candidates",
    }[tier]
    lines = [
        "# DriftLens benchmark — datasheet",
        "",
        f"Generated {generated_at} by the DriftLens Workbench from the stored curation data "
        f"(export format v{EXPORT_VERSION}). Tier selection **{tier}**: {scope}.",
        "",
        "## Composition",
        "",
        f"- Questions in this export: **{n}** (workspace: {len(workspace_questions)}).",
        "- By tier: "
        + (", ".join(f"{_md(k)} {v}" for k, v in sorted(tiers.items())) or "none")
        + ".",
        "- Workspace by tier: "
        + (", ".join(f"{_md(k)} {v}" for k, v in sorted(ws_tiers.items())) or "none")
        + ".",
        "",
        "| domain | questions |",
        "|---|---|",
    ]
    lines += [f"| {_md(d)} | {domains.get(d, 0)} |" for d in DOMAINS]
    extra = sorted(set(domains) - set(DOMAINS))
    lines += [f"| {_md(d)} | {domains[d]} |" for d in extra]
    lines += ["", "| source | questions |", "|---|---|"]
    lines += [f"| {_md(s)} | {c} |" for s, c in sorted(sources.items())]
    lines += [
        "",
        "A question may belong to several domains, so domain counts can sum to more than the "
        "number of questions.",
        "",
        "## How it was built",
        "",
        "1. **Candidates** were imported from CSV/JSONL files (column `source`).",
        "2. **LLM filter** (SPEC §2): one request per question returning "
        '`{"label": ACCEPT|REJECT, "reason": ≤15 words, "domains": [...]}`. It accepts '
        "reasoning-invoking, unverifiable, persona-indifferent, stand-alone questions and "
        "rejects lookups, definitions, trivia, medical triage, jurisdiction-bound advice, "
        "questions personalised to the asker, questions needing unseen context and polls. "
        "Malformed replies got one repair request and were recorded as errors if still "
        "malformed; none was accepted silently.",
        "3. **Human verification** in Label Studio: three annotators answer Yes / No / Unsure "
        "per criterion; annotations made in under 10 seconds are dropped.",
        "4. **Tiers**: *core* when all three annotators give the passing answer on every "
        "criterion, *relaxed* when two of three do.",
        "",
        "### LLM filter results",
        "",
        "- Filter model(s): "
        + (", ".join(f"`{_md(m)}` ({c})" for m, c in sorted(models.items())) or "none")
        + ".",
        "- In this export: " + ", ".join(f"{_md(k)} {v}" for k, v in sorted(filt.items())) + ".",
        "- In the workspace: "
        + (", ".join(f"{_md(k)} {v}" for k, v in sorted(ws_filt.items())) or "none")
        + ".",
        "",
        "### Human verification (per criterion, over the exported questions)",
        "",
    ]
    if criteria:
        lines += [
            "| criterion | passing answer | questions | yes | no | unsure | passed (2 of 3) "
            "| unanimous | mean pairwise agreement | Krippendorff's α |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in criteria:
            lines.append(
                f"| {_md(c.criterion)} | {_md(c.passing or '—')} | {c.questions} | "
                f"{c.votes['yes']} | {c.votes['no']} | {c.votes['unsure']} | {c.passed} | "
                f"{c.unanimous} | {_fmt(c.mean_agreement)} | {_fmt(c.alpha, 3)} |"
            )
        lines += [
            "",
            "Pairwise agreement is the share of annotator pairs giving the same answer on a "
            "question; α is nominal, over questions × annotators (n/a when undefined).",
        ]
    else:
        lines.append("No human votes are stored for the exported questions.")
    lines += [
        "",
        "## Files and fields",
        "",
        f"`{JSONL_NAME}` (one JSON object per line) and `{PARQUET_NAME}` hold the same records:",
        "",
        "- `id`, `text`, `source`: the question as imported;",
        "- `tier`: `core`, `relaxed` or null (unverified);",
        "- `domains`: curated domains, else the filter's;",
        "- `filter_label`, `filter_reason`, `filter_domains`, `filter_model`, `filter_error`: "
        "the LLM filter's verdict (null when not filtered);",
        "- `votes`: per criterion `criterion`, `passing`, `yes`/`no`/`unsure` counts, `n`, "
        "`label` (2-of-3), `passed`, `unanimous`, `agreement` (pairwise share). Annotator "
        "identities are not exported.",
        "",
        "## Licence",
        "",
    ]
    if sources.get(SAMPLE_SOURCE):
        lines.append(
            f"Questions with source `{SAMPLE_SOURCE}` were written for DriftLens and ship "
            "with it under the project's licence (Apache-2.0)."
        )
    lines += [
        "Every other question keeps the licence and terms of its source; check them before "
        "redistributing this export. The curation data (filter verdicts, votes, tiers) are "
        "produced by this workspace.",
        "",
    ]
    return "\n".join(lines)


def export_benchmark(out_dir: Path, *, session: Session, tier: str = "core") -> BenchmarkExport:
    """Write ``benchmark.jsonl``, ``benchmark.parquet`` and ``datasheet.md`` to ``out_dir``.

    Args:
        out_dir: Folder to write to (created when missing).
        session: Open session (read only).
        tier: ``core``, ``relaxed`` or ``all``.

    Raises:
        InputError: Unknown tier, or no question in the selection (with a hint).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    questions = select_questions(tier, session=session)
    if not questions:
        hint = (
            "no questions are stored yet"
            if tier == "all"
            else f"no {tier} questions yet (tiers come from human verification; "
            "use --tier all to export every question)"
        )
        raise InputError(f"Nothing to export: {hint}.")
    ids = [q.id for q in questions if q.id is not None]
    votes = votes_for_questions(ids, session=session)
    records = [question_record(q, votes.get(q.id or -1, [])) for q in questions]
    criteria = criterion_stats(records, votes)
    datasheet = render_datasheet(
        tier,
        records,
        criteria,
        workspace_questions=list_questions(session=session),
        generated_at=utcnow().strftime("%Y-%m-%d %H:%M UTC"),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    jsonl, parquet, sheet = out_dir / JSONL_NAME, out_dir / PARQUET_NAME, out_dir / DATASHEET_NAME

    def write_jsonl(path: Path) -> None:
        with path.open("w", encoding="utf-8", newline="\n") as fh:
            for r in records:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")

    def write_parquet(path: Path) -> None:
        pq.write_table(pa.Table.from_pylist(records, schema=_parquet_schema()), path)

    def write_sheet(path: Path) -> None:
        path.write_text(datasheet, encoding="utf-8")

    _write_atomic(jsonl, write_jsonl)
    _write_atomic(parquet, write_parquet)
    _write_atomic(sheet, write_sheet)
    return BenchmarkExport(
        out_dir=out_dir,
        tier=tier,
        questions=len(records),
        files=(jsonl, parquet, sheet),
        tiers=dict(Counter(r["tier"] or "unverified" for r in records)),
        domains=dict(Counter(d for r in records for d in r["domains"])),
        criteria=criteria,
    )
