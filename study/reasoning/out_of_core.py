"""Out-of-core drift analysis: the drift table and statistics in chunks of questions.

The in-memory path (:func:`study.reasoning.trajectories.drift_table_by_run`) holds one
run's trajectories and the whole drift table; at 10 million responses that is more than a
machine has. Here the questions are taken in ``chunk`` slices in the order ``drift.csv``
is sorted by (question id text), and for each slice every run's trajectories of those
questions are read, compared and reduced:

* the slice's ``drift.csv`` and ``pairs.csv`` rows go, already in file order, to one part
  file per model, and the parts are joined in model order at the end;
* each question's means per class (the report's question table) are complete within its
  slice, and the example pairs are the best of each slice's best;
* the statistics run one model at a time, reading that model's part again in slices of
  ``chunk`` whole questions (:func:`stats_by_model`): each slice is reduced to per-question
  and per-cell sums (:mod:`driftlens_core.row_sums`: the bootstrap's question sums, the null
  test's sample means, Cohen's d's and the noise decomposition's moments) that do not
  depend on where the slices are cut, and models share nothing.

Memory is then bounded by one slice of questions and one model's per-question arrays, not
by the study or a model's rows, and the files are byte-identical to the in-memory path's
(``drift.csv``, ``pairs.csv``, ``stats.json``; ``tests/analysis/test_out_of_core.py``). The
Parquet copies hold the same table, written in row groups.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session, col, select

from driftlens_core.analysis_slices import ModelSlices, analyze_model_slices
from driftlens_core.row_sums import RowChunk
from storage.errors import InputError
from storage.models import GenerationRun, OntologyVersion, Question, Response
from study.reasoning.drift_files import pair_frame, stats_frame
from study.reasoning.examples import choose_examples
from study.reasoning.report import question_table
from study.reasoning.stats_table import stats_input
from study.reasoning.trajectories import drift_table_by_run
from study.safe_csv import frame_csv_text, unguard_frame

#: Questions per slice by default: a few hundred thousand responses at the published design.
DEFAULT_CHUNK_QUESTIONS = 500
#: Rows per Parquet row group when the parts are copied to Parquet.
_PARQUET_ROWS = 200_000
#: Rows the statistics read from a part at a time (cut at a question's end).
_READ_ROWS = 50_000


@dataclass(frozen=True)
class ChunkedDrift:
    """What the out-of-core pass wrote and reduced.

    Attributes:
        drift_csv, pairs_csv: the joined files.
        parts: per model (sorted), its ``drift.csv`` part (a valid drift table itself).
        pair_parts: the ``pairs.csv`` parts in the same order.
        n_pairs: compared pairs.
        skipped: responses not compared, by reason.
        questions: the report's question table (:func:`study.reasoning.report.question_table`).
        examples: the chosen example pairs (:func:`study.reasoning.examples.choose_examples`).
    """

    drift_csv: Path
    pairs_csv: Path
    parts: tuple[tuple[str, Path], ...]
    pair_parts: tuple[Path, ...]
    n_pairs: int
    skipped: dict[str, int]
    questions: pd.DataFrame
    examples: list[dict[str, Any]]


def question_slices(
    run_ids: Sequence[int], *, session: Session, chunk: int
) -> list[list[tuple[int, str]]]:
    """The runs' questions as (id, external id), sorted by external id, in slices."""
    rows = session.exec(
        select(Question.id, Question.external_id)
        .where(
            col(Question.id).in_(
                select(Response.question_id).where(col(Response.run_id).in_(run_ids)).distinct()
            )
        )
        .order_by(col(Question.id))
    ).all()
    ordered = sorted(((int(i), str(k)) for i, k in rows if i is not None), key=lambda r: r[1])
    return [ordered[s : s + chunk] for s in range(0, len(ordered), chunk)]


class _Parts:
    """One append-only CSV part per model (header written once)."""

    def __init__(self, folder: Path, stem: str) -> None:
        self.folder = folder
        self.stem = stem
        self.paths: dict[str, Path] = {}
        self.header = ""

    def add(self, model: str, frame: pd.DataFrame) -> None:
        text = frame_csv_text(frame)
        header, _, body = text.partition("\n")
        self.header = self.header or header
        path = self.paths.get(model)
        if path is None:
            path = self.paths[model] = self.folder / f"{self.stem}-{len(self.paths):05d}.csv"
            path.write_text(header + "\n", encoding="utf-8")
        with path.open("a", encoding="utf-8", newline="") as fh:
            fh.write(body)

    def join(self, out: Path) -> list[tuple[str, Path]]:
        """Write the parts, models in sorted order, as one file under one header."""
        models = sorted(self.paths)
        with out.open("w", encoding="utf-8", newline="") as dst:
            for i, model in enumerate(models):
                with self.paths[model].open(encoding="utf-8", newline="") as src:
                    if i:
                        src.readline()  # every part repeats the header
                    shutil.copyfileobj(src, dst, 1 << 20)
        return [(m, self.paths[m]) for m in models]


def _examples_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    cols = ["model", "question_id", "condition", "condition_class", "sample", "dtw", "sri"]
    return pd.DataFrame.from_records(records, columns=cols)


def _join_questions(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The question table of the whole study from the slices' (columns in report order)."""
    from study.reasoning.report.tables import _CLASS_RANK

    if not tables:
        return pd.DataFrame(columns=["question_id", "question", "pairs"])
    joined = pd.concat(tables, ignore_index=True)
    fixed = ["question_id", "question", "pairs"]
    metric_cols = [c for c in joined.columns if c not in fixed]
    metrics = [m for m in ("dtw", "sri") if any(c.startswith(f"{m}_") for c in metric_cols)]
    classes = sorted(
        {c.split("_", 1)[1] for c in metric_cols},
        key=lambda k: _CLASS_RANK.get(k, len(_CLASS_RANK)),
    )
    order = [f"{m}_{k}" for m in metrics for k in classes if f"{m}_{k}" in joined.columns]
    out = joined.loc[:, fixed + order]
    out["pairs"] = out["pairs"].astype(int)
    return out.sort_values("question_id", kind="stable").reset_index(drop=True)


def build_drift_files(
    run_of: dict[str, GenerationRun],
    labeler_spec: str,
    *,
    session: Session,
    version: OntologyVersion,
    alpha: float,
    work: Path,
    chunk: int = DEFAULT_CHUNK_QUESTIONS,
    examples_per_class: int = 2,
) -> ChunkedDrift:
    """Write ``drift.csv`` and ``pairs.csv`` into ``work`` slice by slice (module docstring).

    Args:
        run_of: model label → run (:func:`study.reasoning.trajectories.run_labels`).
        labeler_spec: the labeler whose labels make the trajectories.
        session: open session.
        version: the ontology version.
        alpha: SRI weight.
        work: the (staged) report folder.
        chunk: questions per slice.
        examples_per_class: example pairs per class.

    Raises:
        InputError: ``chunk`` below 1.
    """
    if chunk < 1:
        raise InputError("--chunk-questions must be at least 1.")
    folder = work / ".parts"
    folder.mkdir(parents=True, exist_ok=True)
    drift_parts, pair_parts = _Parts(folder, "drift"), _Parts(folder, "pairs")
    skipped: Counter[str] = Counter()
    n_pairs = 0
    q_tables: list[pd.DataFrame] = []
    candidates: list[dict[str, Any]] = []
    run_ids = [r.id for r in run_of.values() if r.id is not None]
    for piece in question_slices(run_ids, session=session, chunk=chunk):
        ids = [i for i, _ in piece]
        table = drift_table_by_run(
            run_of, labeler_spec, session=session, version=version, alpha=alpha, question_ids=ids
        )
        skipped.update(table.skipped)
        if table.rows.empty:
            continue
        rows = table.rows
        n_pairs += len(rows)
        # every category's best pair of this slice: the study's best are among them
        candidates.extend(choose_examples(rows, per_class=len(rows)))
        drift = stats_frame(rows)
        pairs = pair_frame(rows)
        for model, part in drift.groupby("model", sort=True):
            drift_parts.add(str(model), part)
        for model, part in pairs.groupby("model", sort=True):
            pair_parts.add(str(model), part)
        texts = {
            str(k): t
            for k, t in session.exec(
                select(Question.external_id, Question.text).where(col(Question.id).in_(ids))
            ).all()
        }
        q_tables.append(question_table(drift, texts))
        del rows, drift, pairs, table
    drift_csv, pairs_csv = work / "drift.csv", work / "pairs.csv"
    parts = drift_parts.join(drift_csv)
    pair_files = tuple(p for _m, p in pair_parts.join(pairs_csv))
    examples = choose_examples(_examples_frame(candidates), per_class=examples_per_class)
    return ChunkedDrift(
        drift_csv=drift_csv,
        pairs_csv=pairs_csv,
        parts=tuple(parts),
        pair_parts=pair_files,
        n_pairs=n_pairs,
        skipped=dict(skipped),
        questions=_join_questions(q_tables),
        examples=examples,
    )


def _read_part(path: Path, questions: int) -> Iterator[pd.DataFrame]:
    """A part's rows in slices of at most ``questions`` whole questions.

    Read as :func:`study.reasoning.stats_table.read_stats_csv_pandas` reads the joined file
    (text ids, the formula guard undone), :data:`_READ_ROWS` rows at a time.
    """
    text = {"question_id": str, "condition": str, "model": str}
    frame: pd.DataFrame | None = None
    for raw in pd.read_csv(path, dtype=text, chunksize=_READ_ROWS):
        part = unguard_frame(raw)
        frame = part if frame is None else pd.concat([frame, part], ignore_index=True)
        ids = frame["question_id"].to_numpy()
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        # the rows are sorted by question: the last question may go on in the next rows.
        # A slice also ends at :data:`_READ_ROWS` rows (whole questions): the text columns
        # are Python strings here, and a slice of many questions would cost more than the
        # columnar reader's whole-model table did.
        while starts.size - 1 >= questions or (len(frame) >= _READ_ROWS and starts.size > 1):
            take = min(questions, starts.size - 1)
            cut = int(starts[take])
            yield frame.iloc[:cut]
            frame = frame.iloc[cut:].reset_index(drop=True)
            starts = starts[take:] - cut
    while frame is not None and len(frame):
        ids = frame["question_id"].to_numpy()
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        cut = int(starts[questions]) if starts.size > questions else len(frame)
        yield frame.iloc[:cut]
        frame = frame.iloc[cut:].reset_index(drop=True)


@dataclass
class PartIndex:
    """What one cheap pass over a model's part says: its questions, conditions, samples."""

    n_questions: int
    conditions: dict[str, str]
    samples: set[int]
    columns: tuple[str, ...]


def _index_part(path: Path, classes: dict[str, str]) -> PartIndex:
    """Count the part's questions (checking their order) and collect its conditions."""
    usecols = ["question_id", "condition", "condition_class", "sample"]
    columns = tuple(pd.read_csv(path, nrows=0).columns)
    wanted = [c for c in usecols if c in columns]
    text = {"question_id": str, "condition": str}
    n_q, last = 0, None
    conditions: dict[str, str] = {}
    samples: set[int] = set()
    for raw in pd.read_csv(path, usecols=wanted, dtype=text, chunksize=_READ_ROWS):
        frame = unguard_frame(raw)
        ids = frame["question_id"].astype(str).to_numpy()
        change = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        starts = [ids[0], *ids[change]]
        for qid in starts:
            if qid == last:
                continue
            if last is not None and qid < last:
                raise InputError(f"{path} is not sorted by question_id ({qid!r} after {last!r}).")
            n_q, last = n_q + 1, qid
        if "sample" in frame.columns:
            samples.update(int(v) for v in frame["sample"].unique())
        pairs = frame[["condition", "condition_class"]].drop_duplicates()
        for c, k in pairs.itertuples(index=False):
            if classes.setdefault(str(c), str(k)) != str(k):
                raise InputError(f"Condition {c!r} appears with more than one condition_class.")
            conditions[str(c)] = str(k)
    return PartIndex(n_q, conditions, samples, columns)


def model_slices(
    model: str, path: Path, index: PartIndex, sample_names: tuple[str, ...], questions: int
) -> ModelSlices:
    """A model's part as slices of whole questions with the model's codes."""
    names = tuple(sorted(index.conditions))
    where = {n: i for i, n in enumerate(names)}
    sample_at = {int(n): i for i, n in enumerate(sample_names)}
    first = stats_input(next(iter(_read_part(path, questions))), metrics=None, source=path)

    def slices() -> Iterator[RowChunk]:
        offset = 0
        for piece in _read_part(path, questions):
            inp = stats_input(piece, metrics=None, source=path)
            cond = np.array([where[n] for n in inp.condition_names], dtype=np.int64)
            sample = None
            if inp.sample is not None:
                codes = np.array([sample_at[int(n)] for n in inp.sample_names], dtype=np.int64)
                sample = codes[inp.sample]
            yield RowChunk(
                question=inp.question + offset,
                condition=cond[inp.condition],
                values=inp.values,
                sample=sample,
            )
            offset += int(inp.question.max()) + 1  # the piece's questions, codes 0..k-1

    return ModelSlices(
        name=first.model_names[0] if first.model_names else model,
        condition_names=names,
        condition_classes=tuple(index.conditions[n] for n in names),
        metrics=first.metrics,
        n_questions=index.n_questions,
        sample_names=sample_names if first.sample is not None else (),
        labeled="label_run" in index.columns,
        slices=slices,
    )


def index_parts(parts: Sequence[tuple[str, Path]]) -> tuple[list[PartIndex], tuple[str, ...]]:
    """Each part's index (one cheap pass) and the table's sample names (every model's).

    Raises:
        InputError: a part not sorted by question, or a condition with two classes.
    """
    classes: dict[str, str] = {}
    indexes = [_index_part(path, classes) for _model, path in parts]
    samples = sorted(set().union(*(i.samples for i in indexes)))
    return indexes, tuple(str(s) for s in samples)


def stats_by_model(
    parts: Sequence[tuple[str, Path]],
    *,
    bootstrap: int,
    seed: int,
    chunk: int = DEFAULT_CHUNK_QUESTIONS,
) -> dict[str, Any]:
    """The statistics of the joined drift table, one slice of one model's questions at a time.

    Equal, byte for byte in ``stats.json``, to :func:`study.reasoning.drift_files.
    compute_stats` on the joined ``drift.csv`` (:mod:`driftlens_core.analysis_slices`).

    Args:
        parts: per model (sorted), its ``drift.csv`` part.
        bootstrap: cluster-bootstrap replicates ``B``.
        seed: the seed.
        chunk: questions per slice.

    Raises:
        InputError: the table cannot be analysed (the sentence ``driftlens stats`` gives).
    """
    indexes, sample_names = index_parts(parts)
    models = (
        model_slices(model, path, index, sample_names, chunk)
        for (model, path), index in zip(parts, indexes, strict=True)
    )
    try:
        return analyze_model_slices(
            models, n_models=len(parts), bootstrap=bootstrap, seed=seed
        ).to_dict()
    except ValueError as exc:
        raise InputError(str(exc)) from None


def write_parquet(csv_parts: Sequence[Path], out: Path) -> None:
    """Copy CSV parts (one header each) to one Parquet file in row groups (bounded memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer: Any = None
    text = {"question_id": str, "condition": str, "model": str, "variant": str, "category": str}
    try:
        for path in csv_parts:
            for frame in pd.read_csv(path, dtype=text, chunksize=_PARQUET_ROWS):
                table = pa.Table.from_pandas(unguard_frame(frame), preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(out, table.schema)
                writer.write_table(table.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()
