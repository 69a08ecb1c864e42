"""A memory-conflicts study in one command, set up from the browser: banks, run, read-back.

The Memory conflicts page is thin over these functions. Banks are the shipped sample or a
JSONL file the researcher uploads, validated by the importer ``driftlens conflicts import``
uses (the first problem names the uploaded file and its line) and stored. A study is one
response model answering every stored bank at each distractor dose, the chosen policies
answering the same banks, every answer scored by each judge, and the report written into
the run's own folder: :func:`run_conflict_study`, which ``driftlens conflicts study`` runs
(:func:`study_argv`, the command a page submits as a background job). Each step resumes:
stored answers and scores are not asked again.

Reading back: :func:`read_report` is the report folder (the report's own tables as
``report_tables.json``, the figure, ``stats.json``); :func:`answers_frame` every answer
with each judge's scores, for download. Texts are untrusted: pages show them in data
frames or ``st.text`` only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from sqlmodel import Session

from llm.roles import SELF_JUDGING_FLAG
from llm.specs import ModelSpec, spec_simulated
from storage.errors import InputError
from storage.repo.chunks import id_chunks
from storage.yaml_input import decode_upload
from study.conflicts.items import BankImport, parse_banks, store_banks
from study.conflicts.policy import HEURISTICS, POLICIES
from study.conflicts.sim.presets import DESCRIPTIONS
from study.report.folder import folder_slug

Stage = Callable[[str], Callable[[int, int], None]]


def sim_responders() -> dict[str, str]:
    """The simulated response models (``sim/mc-*``) → what each one does."""
    return {f"sim/{k}": v for k, v in DESCRIPTIONS.items() if k.startswith("mc-")}


def sim_judges() -> dict[str, str]:
    """The simulated rubric judges (``sim/judge-*``) → what each one does."""
    return {f"sim/{k}": v for k, v in DESCRIPTIONS.items() if k.startswith("judge-")}


#: Policies a study can add beside the model: the heuristics need no model, caap a backbone.
POLICY_NAMES: tuple[str, ...] = POLICIES


def check_banks_upload(filename: str, data: bytes) -> int:
    """Validate an uploaded bank file (JSONL, one instance a line); return its instances.

    Raises:
        InputError: not .jsonl, not UTF-8, empty, or a line with a problem (the message
            names the file, the line and how many more problems there are).
    """
    if Path(filename).suffix.lower() not in (".jsonl", ".json"):
        raise InputError(f"{filename}: bank files are JSONL (.jsonl), one instance a line.")
    text = decode_upload(data, filename=filename)
    parsed = parse_banks(text)
    if parsed.problems:
        first = parsed.problems[0]
        more = len(parsed.problems) - 1
        tail = f" ({more} more problem(s) in the file)" if more else ""
        raise InputError(f"{filename} line {first.line}: {first.message}{tail}.")
    if not parsed.instances:
        raise InputError(f"{filename} holds no bank instances (one JSON object per line).")
    return len(parsed.instances)


def import_banks_upload(filename: str, data: bytes, *, session: Session) -> BankImport:
    """Validate an uploaded bank file and store its instances (nothing stored on a problem).

    Raises:
        InputError: see :func:`check_banks_upload`.
    """
    check_banks_upload(filename, data)
    instances = parse_banks(data.decode("utf-8-sig")).instances
    return store_banks(instances, source=Path(filename).name, session=session)


#: How a policy's run is named after its study's run; the demo's runs start with the prefix.
POLICY_INFIX = "-policy-"
DEMO_PREFIX = "conflicts-demo-"


def policy_run_name(run: str, policy: str) -> str:
    """The run a policy's answers of study ``run`` are stored under."""
    return f"{run}{POLICY_INFIX}{policy}"


def baseline_run_name(run: str) -> str:
    """The run the no-memory baseline of study ``run`` is stored under.

    Named as a policy run (``<run>-policy-no-memory``; no policy has that name), so it
    belongs to its study's report folder as the policies' runs do.
    """
    return policy_run_name(run, "no-memory")


def report_folder(workspace: Path, run: str) -> Path:
    """The report folder of the study a run belongs to, never shared with another study.

    ``reports/memory-conflicts/<run>`` (not under ``reports/conflicts``: the demo's report
    folder, replaced as a whole); a policy run's is its study's; the demo's runs share the
    demo's report.
    """
    if run.startswith(DEMO_PREFIX):
        return workspace / "reports" / "conflicts"
    study, sep, _ = run.rpartition(POLICY_INFIX)
    return workspace / "reports" / "memory-conflicts" / folder_slug(study if sep else run)


def run_simulated(run: str, *, session: Session) -> bool:
    """Whether a run's model and every judge that scored it are simulated (``sim/…``)."""
    from storage.models import ModelSpecRow
    from storage.repo.runs import require_run

    row = require_run(run, session=session)
    spec = session.get(ModelSpecRow, row.model_spec_id)
    policy = (row.config or {}).get("policy")
    model_sim = spec is None or spec_simulated(spec.spec) or policy not in (None, "caap")
    judges = set(answers_frame([run], session=session).get("judge", pd.Series(dtype=str)))
    return model_sim and all(spec_simulated(str(j)) for j in judges)


@dataclass(frozen=True)
class ConflictStudy:
    """One memory-conflicts study (what ``driftlens conflicts study`` is asked for).

    Attributes:
        run: The response model's run name (policies add ``<run>-policy-<name>``).
        model: The response model.
        judges: Rubric judges; each scores every answer, kept separately.
        doses: Distractor doses (memories added besides the conflicting ones).
        samples: Samples per bank and dose.
        policies: Policies answering the same banks (heuristics; ``caap`` uses ``model``).
        seed: The run seed (``None``: derived from the run name).
        bootstrap: Bootstrap replicates of the report's intervals.
        concurrency: Requests in flight.
        baseline: Also answer the same requests with no memory (the ``no-memory`` track,
            run :func:`baseline_run_name`), judged alike: the report reads the scores
            against it.
        allow_self_judging: Let ``model`` be one of the judges (refused otherwise: it
            would grade its own answers).
        max_tokens: The answers' token limit (a small model on a CPU needs a low one).
    """

    run: str
    model: ModelSpec
    judges: tuple[ModelSpec, ...]
    doses: tuple[int, ...] = (0, 6)
    samples: int = 1
    policies: tuple[str, ...] = ()
    seed: int | None = None
    bootstrap: int = 2000
    concurrency: int = 8
    baseline: bool = False
    allow_self_judging: bool = False
    max_tokens: int = 600

    def check(self) -> None:
        """Refuse a study that cannot run.

        Raises:
            InputError: no run name, no judge, an unknown policy, a sample count or B
                outside :mod:`study.limits`' bounds, or the model under test among the
                judges without ``allow_self_judging``.
        """
        from llm.roles import check_role
        from study.limits import BOOTSTRAP, SAMPLES

        SAMPLES.check(self.samples)
        BOOTSTRAP.check(self.bootstrap)
        if not self.run.strip():
            raise InputError("Give the run a name.")
        if not self.judges:
            raise InputError("Choose at least one judge.")
        bad = [p for p in self.policies if p not in POLICY_NAMES]
        if bad:
            raise InputError(f"Unknown policy {bad[0]!r}; use one of {', '.join(POLICY_NAMES)}.")
        for judge in self.judges:  # before any answer is asked for
            check_role(
                "judge",
                str(judge),
                str(self.model),
                allow_self=self.allow_self_judging,
                where=f"run {self.run!r}",
            )


def study_argv(study: ConflictStudy, *, out: Path) -> list[str]:
    """``driftlens conflicts study …`` for ``study`` (answer, policies, judge, report)."""
    study.check()
    argv = ["conflicts", "study", "--model", str(study.model), "--run", study.run]
    argv += ["--distractors", ",".join(str(d) for d in study.doses)]
    argv += ["--samples", str(study.samples), "--out", str(out)]
    argv += ["--bootstrap", str(study.bootstrap), "--concurrency", str(study.concurrency)]
    for j in dict.fromkeys(study.judges):
        argv += ["--judge", str(j)]
    for p in dict.fromkeys(study.policies):
        argv += ["--policy", p]
    if study.seed is not None:
        argv += ["--seed", str(study.seed)]
    if study.baseline:
        argv.append("--baseline")
    if study.allow_self_judging:
        argv.append(SELF_JUDGING_FLAG)
    if study.max_tokens != ConflictStudy.max_tokens:
        argv += ["--max-tokens", str(study.max_tokens)]
    return argv


def run_conflict_study(
    study: ConflictStudy, *, session: Session, out_dir: Path, stage: Stage | None = None
) -> Any:
    """Answer, run the policies, judge and report (each step resumes what is stored).

    Returns:
        The :class:`~study.conflicts.report.document.ConflictReport` written into ``out_dir``.

    Raises:
        InputError: see :meth:`ConflictStudy.check`; no banks stored; nothing judged.
    """
    from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
    from study.conflicts.policy import run_policy
    from study.conflicts.report import build_report
    from study.conflicts.score import judge_conflict_run

    study.check()
    generate_conflicts(
        ConflictGenerationOptions(
            model=study.model,
            run=study.run,
            doses=study.doses,
            samples=study.samples,
            seed=study.seed,
            concurrency=study.concurrency,
            max_tokens=study.max_tokens,
        ),
        session=session,
        progress=stage(f"answering ({study.model})") if stage else None,
    )
    baseline_runs = [baseline_run_name(study.run)] if study.baseline else []
    for run in baseline_runs:
        generate_conflicts(
            ConflictGenerationOptions(
                model=study.model,
                run=run,
                doses=(0,),
                samples=study.samples,
                track="no-memory",
                seed=study.seed,
                concurrency=study.concurrency,
                max_tokens=study.max_tokens,
            ),
            session=session,
            progress=stage(f"answering with no memory ({study.model})") if stage else None,
        )
    policy_runs = [policy_run_name(study.run, p) for p in study.policies]
    for policy, run in zip(study.policies, policy_runs, strict=True):
        run_policy(
            policy,
            run,
            session=session,
            backbone=None if policy in HEURISTICS else study.model,
            doses=study.doses,
            seed=study.seed or 0,
            concurrency=study.concurrency,
        )
    for judge in study.judges:
        for run in (study.run, *policy_runs, *baseline_runs):
            judge_conflict_run(
                run,
                judge,
                session=session,
                concurrency=study.concurrency,
                progress=stage(f"judging {run} ({judge})") if stage else None,
                allow_self_judging=study.allow_self_judging,
            )
    report = build_report(
        [study.run],
        policy_runs=policy_runs,
        baseline_runs=baseline_runs,
        session=session,
        out_dir=out_dir,
        bootstrap=study.bootstrap,
        seed=study.seed or 0,
    )
    session.commit()
    return report


@dataclass(frozen=True)
class ConflictReportFolder:
    """What the report folder of a study holds.

    Attributes:
        folder: The folder.
        tables: The report's tables in its order: ``(title, table, note)``.
        figure: The distractor curve (PNG), when the study had two doses or more.
        stats: ``stats.json`` (``None`` for a folder written before it existed).
        html: ``conflicts_report.html``.
    """

    folder: Path
    tables: list[tuple[str, pd.DataFrame, str]]
    figure: Path | None
    stats: Path | None
    html: Path


def read_report(folder: Path) -> ConflictReportFolder | None:
    """The report in ``folder``, or ``None`` when none was written there yet."""
    html = folder / "conflicts_report.html"
    if not html.is_file():
        return None
    tables = []
    path = folder / "report_tables.json"
    if path.is_file():
        for t in json.loads(path.read_text(encoding="utf-8")):
            tables.append(
                (str(t["title"]), pd.DataFrame(t["rows"], columns=t["header"]), t["note"])
            )
    figure = folder / "distractor_curve.png"
    stats = folder / "stats.json"
    return ConflictReportFolder(
        folder,
        tables,
        figure if figure.is_file() else None,
        stats if stats.is_file() else None,
        html,
    )


def answers_frame(runs: Sequence[str], *, session: Session) -> pd.DataFrame:
    """Every judged answer of ``runs`` with each judge's scores (one row per answer × judge).

    Raises:
        NotFoundError: a run does not exist.
    """
    from sqlmodel import col, select

    from storage.models import Response
    from study.conflicts.analysis import stored_table

    table = stored_table(list(runs), session=session)
    if table.empty:
        return table
    ids = [int(i) for i in table["response_id"].unique()]
    texts: dict[int, str | None] = {}
    for chunk in id_chunks(ids):  # SQLite's parameter limit
        stmt = select(Response.id, Response.text).where(col(Response.id).in_(chunk))
        texts.update({i: text for i, text in session.exec(stmt) if i is not None})
    table = table.copy()
    table["answer"] = table["response_id"].map(texts)
    return table.reset_index(drop=True)
