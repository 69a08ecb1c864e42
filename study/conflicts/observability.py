"""Bank observability: did the bank a memory system extracted keep the conflict?

On the pipeline track every instance's bank is what a memory system kept of the
conflict. Whether the conflict is still *observable* in it is labelled three ways:

* ``FULL`` — both sides and every memory that carries the relation (context, phase,
  source) survived;
* ``PARTIAL`` — both sides survived, a relation-carrying memory did not;
* ``None`` — a side is gone: no conflict can be seen (D1/D2 do not apply).

Three labellers are compared: the extractor's own label (known exactly for ``sim-lossy``
and for dialogue extraction against the known truth), an **LLM observability judge**
(this module) and **human annotators** (the ``bank_observability`` Label Studio study,
:mod:`annotation`). The judge sees the curated conflict with each reference memory's role
and the extracted memories, and answers one strict-JSON object
``{"label": "FULL|PARTIAL|None", "reason": "..."}`` inside ``<answer></answer>``
(prompt ``observability-judge-v1``). A broken reply gets one repair request; each bank
ends ``ok``, ``repaired`` or ``error`` and the raw replies are stored, so malformed output
is kept and flagged. Requests go through :mod:`llm.batch` with the cache.

Storage: the bank of one instance is the same for every dose and sample of a pipeline
run, so the verdict is a ``JudgeScore`` of kind ``conflict_observability`` (value 0 FULL,
1 PARTIAL, 2 None; ``None`` on error) on the instance's *representative* response — its
lowest dose, sample 0 (:func:`observability_banks`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from annotation.agreement import LabelAgreement, label_agreement
from llm.sim.tasks import task_marker
from llm.specs import ModelSpec
from llm.types import ChatBackend, ChatMessage
from storage.errors import InputError
from storage.models import JudgeScore, Response
from storage.repo.conflicts import extracted_core, extractor_label, representative_banks
from storage.repo.judges import judge_scores_for
from storage.repo.runs import require_run
from study.conflicts.items import ConflictInstance
from study.conflicts.score import ConflictJudgeSummary, run_judge_batch
from study.strict_json import StrictParseError, extract_json_object

PROMPT_VERSION = "observability-judge-v1"
TASK = "conflict-observability"
KIND = "conflict_observability"
LABELS: tuple[str, ...] = ("FULL", "PARTIAL", "None")
LABEL_CODE: dict[str, int] = {label: i for i, label in enumerate(LABELS)}
MAX_TOKENS = 300

_RUBRIC = (
    "You check whether a memory system kept a conflict about a user. The case gives the "
    "conflict as curated (a summary and the reference memories, each with its role: "
    "side_a, side_b, relation — a memory may have several roles) and the memories the "
    "system extracted. A reference memory counts as kept when an extracted memory states "
    "the same fact. Label: FULL when both sides and every relation memory are kept; "
    "PARTIAL when both sides are kept but a relation memory is missing, so the tension is "
    "visible but not what explains it; None when a side is missing, so no conflict can be "
    "seen. Use only the case. Reply with one JSON object inside <answer></answer>: "
    '{"label": "FULL" | "PARTIAL" | "None", "reason": "one sentence"}'
)


def rubric() -> str:
    """The judge's system text."""
    return f"{task_marker(TASK)}\n{_RUBRIC}"


def reference_memories(inst: ConflictInstance) -> list[dict[str, str]]:
    """The curated core memories with their roles (``side_a,relation`` …)."""
    p = inst.provenance
    out = []
    for i, text in enumerate(inst.core_memories):
        roles = [
            name
            for name, idx in (("side_a", p.side_a), ("side_b", p.side_b), ("relation", p.relation))
            if i in idx
        ]
        out.append({"text": text, "role": ",".join(roles) or "core"})
    return out


def observability_case(inst: ConflictInstance, extracted: Sequence[str]) -> dict[str, Any]:
    """What the observability judge (and the annotator) sees of one extracted bank."""
    return {
        "instance_id": inst.instance_id,
        "type": inst.type,
        "conflict": inst.provenance.summary,
        "reference": reference_memories(inst),
        "extracted": list(extracted),
    }


def observability_messages(case: Mapping[str, Any]) -> tuple[ChatMessage, ...]:
    """System rubric + user message whose last line is the case JSON."""
    return (
        ChatMessage(role="system", content=rubric()),
        ChatMessage(
            role="user",
            content="Label this extracted bank. The case as JSON:\n"
            + json.dumps(case, ensure_ascii=False),
        ),
    )


def parse_observability(text: str) -> str:
    """The label of one judge reply.

    Raises:
        StrictParseError: no single ``<answer>`` object, or a label outside FULL/PARTIAL/None.
    """
    obj = extract_json_object(text, require_answer_tag=True)
    label = obj.get("label")
    if label not in LABELS:
        raise StrictParseError(f'"label" must be one of "FULL", "PARTIAL", "None"; got {label!r}')
    return str(label)


@dataclass(frozen=True)
class ExtractedBankRow:
    """One instance's extracted bank in a pipeline run."""

    instance: ConflictInstance
    response: Response
    extracted: tuple[str, ...]
    extractor_label: str
    memory_system: str


def observability_banks(run_name: str, *, session: Session) -> list[ExtractedBankRow]:
    """The extracted bank of every instance of a pipeline run (representative response each).

    Raises:
        NotFoundError: no such run.
        InputError: the run is not a pipeline-track conflicts run.
    """
    run = require_run(run_name, session=session)
    assert run.id is not None
    config = run.config or {}
    if config.get("track") != "pipeline":
        raise InputError(
            f"Run {run_name!r} is not a pipeline-track conflicts run; observability is "
            "labelled on extracted banks (generate with --track pipeline)."
        )
    system = str(config.get("memory_system", ""))
    return [
        ExtractedBankRow(
            instance=ConflictInstance.model_validate(bank.content),
            response=r,
            extracted=extracted_core(r),
            extractor_label=extractor_label(r),
            memory_system=system,
        )
        for r, bank in representative_banks(run.id, session=session)
    ]


def judge_observability_run(
    run_name: str,
    judge: ModelSpec,
    *,
    session: Session,
    concurrency: int = 16,
    progress: Callable[[int, int], None] | None = None,
    backend: ChatBackend | None = None,
) -> ConflictJudgeSummary:
    """Label every extracted bank of a pipeline run with one LLM judge (labelled ones skipped).

    Args:
        run_name: The pipeline-track conflicts run.
        judge: The judge; verdicts are stored under its canonical ``provider/model`` text.
        session: Session (LLM cache and storage).
        concurrency: Requests in flight.
        progress: ``progress(done, total)`` over the first requests.
        backend: A backend to use instead of building one from ``judge``.
    """
    judge_model = str(judge)
    rows = observability_banks(run_name, session=session)
    done = {
        s.response_id
        for s in judge_scores_for(
            [r.response.id for r in rows if r.response.id is not None],
            kind=KIND,
            judge_model=judge_model,
            session=session,
        )
    }
    todo = [r for r in rows if r.response.id not in done]
    cases = [observability_case(r.instance, r.extracted) for r in todo]

    def rows_for(i: int, label: str | None, raw: str | None, status: str) -> list[JudgeScore]:
        rid = todo[i].response.id
        assert rid is not None
        value = None if label is None else float(LABEL_CODE[label])
        return [
            JudgeScore(
                response_id=rid,
                judge_model=judge_model,
                kind=KIND,
                value=value,
                raw_output=raw,
                parse_status=status,
            )
        ]

    return run_judge_batch(
        run_name,
        judge,
        [observability_messages(c) for c in cases],
        parse=lambda _i, text: parse_observability(text),
        repair_message=lambda _i, exc: (
            f"Your reply could not be read: {exc}. Reply again with only the JSON object "
            'inside <answer></answer>, "label" one of FULL, PARTIAL, None.'
        ),
        rows_for=rows_for,
        skipped=len(rows) - len(todo),
        max_tokens=MAX_TOKENS,
        prompt_version=PROMPT_VERSION,
        session=session,
        concurrency=concurrency,
        progress=progress,
        backend=backend,
    )


def stored_observability(
    rows: Sequence[ExtractedBankRow], *, session: Session
) -> dict[str, dict[str, str | None]]:
    """``instance_id → {judge: label}`` of stored verdicts (``None`` = the reply was an error)."""
    by_response = {r.response.id: r.instance.instance_id for r in rows}
    out: dict[str, dict[str, str | None]] = defaultdict(dict)
    ids = [i for i in by_response if i is not None]
    for s in judge_scores_for(ids, kind=KIND, session=session):
        label = None if s.value is None else LABELS[int(s.value)]
        out[by_response[s.response_id]][s.judge_model] = label
    return dict(out)


@dataclass(frozen=True)
class ObservabilityReport:
    """Shares per labeller and agreement between labellers of one pipeline run."""

    run: str
    memory_system: str
    banks: int
    shares: dict[str, dict[str, tuple[int, float, float]]]
    agreement: tuple[LabelAgreement, ...]


def human_labels(run_name: str, *, session: Session) -> dict[str, str]:
    """``instance_id → label`` the human study agreed on for this run (empty without one)."""
    from annotation.apply import study_aggregate
    from storage.repo.studies import latest_study
    from study.conflicts.human.kinds import human_observability_labels

    if latest_study("bank_observability", session=session) is None:
        return {}
    _, agg = study_aggregate("bank_observability", session=session)
    return {
        iid: lab for (run, iid), lab in human_observability_labels(agg).items() if run == run_name
    }


def observability_report(
    run_name: str,
    *,
    session: Session,
    human: Mapping[str, str] | None = None,
) -> ObservabilityReport:
    """FULL/PARTIAL/None shares (Wilson intervals) per labeller and their pairwise agreement.

    Args:
        run_name: The pipeline-track run.
        session: Session.
        human: ``instance_id → label`` agreed by the annotators of the
            ``bank_observability`` study; default: read from the stored study
            (:func:`human_labels`), none when it was never pushed.
    """
    from driftlens_core.proportions import proportion_interval

    rows = observability_banks(run_name, session=session)
    judged = stored_observability(rows, session=session)
    raters: dict[str, dict[str, str]] = {
        "extractor": {r.instance.instance_id: r.extractor_label for r in rows}
    }
    for iid, by_judge in judged.items():
        for judge, label in by_judge.items():
            if label is not None:
                raters.setdefault(judge, {})[iid] = label
    if human is None:
        human = human_labels(run_name, session=session)
    if human:
        raters["humans"] = dict(human)
    shares: dict[str, dict[str, tuple[int, float, float]]] = {}
    for name, labels in raters.items():
        n = len(labels)
        shares[name] = {}
        for label in LABELS:
            k = sum(1 for v in labels.values() if v == label)
            ci = proportion_interval(k, n) if n else None
            shares[name][label] = (
                k,
                ci.ci_low if ci is not None else float("nan"),
                ci.ci_high if ci is not None else float("nan"),
            )
    names = list(raters)
    agreement = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            common = sorted(set(raters[a]) & set(raters[b]))
            agreement.append(label_agreement(a, b, [(raters[a][k], raters[b][k]) for k in common]))
    return ObservabilityReport(
        run=run_name,
        memory_system=rows[0].memory_system if rows else "",
        banks=len(rows),
        shares=shares,
        agreement=tuple(agreement),
    )
