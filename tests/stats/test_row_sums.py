"""A model's statistics from slices of its questions equal the whole table's, bit for bit.

:func:`driftlens_core.analysis_slices.analyze_model_slices` (the out-of-core path of
``driftlens analyze --chunk-questions``) against :func:`driftlens_core.analysis.analyze_table`
on the same rows cut into slices of 1 to 4 questions at random: the whole ``to_dict()``
(bootstrap, null test, noise decomposition, Cohen's d, mixed model) must be equal, with and
without the sample and label-run columns.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pandas as pd
import pytest

from driftlens_core.analysis import analyze_table
from driftlens_core.analysis_slices import ModelSlices, analyze_model_slices
from driftlens_core.row_sums import RowChunk, reduce_rows
from driftlens_core.stats_input import StatsInput, stats_input_from_columns

CONDITIONS = (
    ("base", "none"),
    ("filler", "noise"),
    ("typo", "noise"),
    ("age", "attribute"),
    ("job_loss", "life_event"),
)


def _table(rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for model in ("m-a", "m-b"):
        for q in range(14):
            level = rng.normal(0.3, 0.05)
            for cond, klass in CONDITIONS:
                if model == "m-b" and cond == "typo":
                    continue  # a condition one model lacks
                shift = 0.08 if klass in ("attribute", "life_event") else 0.0
                for sample in (0, 1, 2):
                    for label in (0, 1):
                        rows.append(
                            {
                                "model": model,
                                "question_id": f"q{q:02d}",
                                "condition": cond,
                                "condition_class": klass,
                                "sample": sample,
                                "label_run": label,
                                "dtw": level + shift + rng.normal(0, 0.1),
                                "sri": rng.normal(0.2 + shift, 0.05),
                            }
                        )
    return pd.DataFrame(rows)


def _slices(inp: StatsInput, rng: np.random.Generator) -> list[ModelSlices]:
    """Each model's rows with the model's own codes, cut at random question boundaries."""
    out = []
    for code, name in enumerate(inp.model_names):
        rows = inp.model == code
        q_keys, q = np.unique(inp.question[rows], return_inverse=True)
        c_keys, c = np.unique(inp.condition[rows], return_inverse=True)
        x = inp.values[rows]
        s = inp.sample[rows] if inp.sample is not None else None
        cuts = [0]
        while cuts[-1] < q_keys.size:
            cuts.append(min(q_keys.size, cuts[-1] + int(rng.integers(1, 5))))
        chunks = []
        for lo, hi in itertools.pairwise(cuts):
            pick = (q >= lo) & (q < hi)
            chunks.append(
                RowChunk(
                    question=q[pick],
                    condition=c[pick],
                    values=x[pick],
                    sample=None if s is None else s[pick],
                )
            )
        assert len(chunks) > 3
        out.append(
            ModelSlices(
                name=name,
                condition_names=tuple(inp.condition_names[k] for k in c_keys),
                condition_classes=tuple(inp.condition_classes[k] for k in c_keys),
                metrics=inp.metrics,
                n_questions=int(q_keys.size),
                sample_names=tuple(inp.sample_names) if s is not None else (),
                labeled=inp.label_run is not None,
                slices=functools.partial(iter, chunks),
            )
        )
    return out


@pytest.mark.parametrize("columns", ["sample+label", "sample", "neither"])
def test_slices_give_the_whole_tables_statistics(columns: str) -> None:
    rng = np.random.default_rng(7)
    df = _table(rng)
    if columns != "sample+label":
        df = df.drop(columns="label_run")
    if columns == "neither":
        df = df[df["sample"] == 0].drop(columns="sample")
    inp = stats_input_from_columns(df)
    whole = analyze_table(inp, bootstrap=300, seed=11).to_dict()
    models = _slices(inp, rng)
    sliced = analyze_model_slices(models, n_models=len(models), bootstrap=300, seed=11)
    assert sliced.to_dict() == whole
    nd = whole["models"]["m-a"]["metrics"]["dtw"]["noise_decomposition"]
    assert nd is not None and any(v is not None for v in nd["variance"].values())
    assert whole["models"]["m-a"]["metrics"]["dtw"]["conditions"]["age"]["cohens_d"] is not None


def test_one_metric_in_several_slices_is_refused() -> None:
    # with one column numpy sums the noise rows pairwise: a split would change the bits
    x = np.arange(6, dtype=np.float64)[:, None]
    chunks = [
        RowChunk(
            question=np.array([0, 0, 0]), condition=np.array([0, 0, 0]), values=x[:3], sample=None
        ),
        RowChunk(
            question=np.array([1, 1, 1]), condition=np.array([0, 0, 0]), values=x[3:], sample=None
        ),
    ]
    with pytest.raises(ValueError, match="one metric column"):
        reduce_rows(
            lambda: chunks, n_questions=2, noise=np.array([True]), n_metrics=1, labeled=False
        )


@pytest.mark.parametrize("columns", ["sample+label", "sample", "neither"])
def test_sums_match_the_row_formulas(columns: str) -> None:
    """Cohen's d and the noise decomposition from sums equal the row functions' values."""
    from driftlens_core.calibration import noise_decomposition
    from driftlens_core.effects import cohens_d
    from driftlens_core.row_sums import cohens_d_from_sums, noise_decomposition_from_sums

    df = _table(np.random.default_rng(3))
    df = df[df["model"] == "m-a"]
    if columns != "sample+label":
        df = df.drop(columns="label_run")
    if columns == "neither":
        df = df[df["sample"] == 0].drop(columns="sample")
    inp = stats_input_from_columns(df)
    noise = np.array([k == "noise" for k in inp.condition_classes])
    chunk = RowChunk(inp.question, inp.condition, inp.values, inp.sample)
    sums = reduce_rows(
        lambda: [chunk],
        n_questions=int(inp.question.max()) + 1,
        noise=noise,
        n_metrics=2,
        labeled=inp.label_run is not None,
    )
    none = np.array([inp.condition_classes.index("none")])
    age = inp.condition_names.index("age")
    for m in range(2):
        x = inp.values[:, m]
        want = cohens_d(x[inp.condition == age], x[inp.condition == none[0]])
        assert cohens_d_from_sums(sums, age, none, m) == pytest.approx(want, rel=1e-12)
        row = noise_decomposition(x, inp.question, inp.condition, inp.sample, inp.label_run)
        got = noise_decomposition_from_sums(sums, m, has_sample=inp.sample is not None)
        for field in ("between_question", "question_condition", "model", "labeler", "within_cell"):
            a, b = getattr(got, field), getattr(row, field)
            assert (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, rel=1e-10, abs=1e-15)
