"""The Compare page's typed request (study/compare/request.py): its JSON round trip, when
the page computes inline, its key, one-sentence refusals, and the ``compare run`` job
writing exactly what the service returns."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from sqlmodel import Session

from llm.specs import ModelSpec
from storage.errors import InputError
from storage.settings import resolve_settings
from study.compare import CompareOptions, compare_runs
from study.compare.request import (
    INLINE_MAX_WORK,
    CompareRequest,
    job_folder,
    read_job_comparison,
    run_compare_job,
)
from tests.compare.conftest import battery_doc, dose_pair

RUNS = ("cmp:d025-s1", "cmp:d075-s1")


@pytest.mark.parametrize("margin", [None, 0.05, math.nan])
def test_a_request_survives_its_json_round_trip(margin: float | None) -> None:
    req = CompareRequest(RUNS, "disposition", CompareOptions(margin=margin, n_boot=400, seed=3))
    back = CompareRequest.from_args(req.to_args())
    assert back.runs == req.runs and back.instrument == req.instrument
    if margin is not None and math.isnan(margin):
        assert back.options.margin is not None and math.isnan(back.options.margin)
        assert back.options.n_boot == 400 and back.options.seed == 3
    else:
        assert back == req


def test_the_page_computes_inline_up_to_the_work_bound() -> None:
    two = CompareRequest(RUNS, "d", CompareOptions(n_boot=INLINE_MAX_WORK))
    assert two.pairs == 1 and two.inline
    assert not CompareRequest(RUNS, "d", CompareOptions(n_boot=INLINE_MAX_WORK + 1)).inline
    four = CompareRequest(("a", "b", "c", "d"), "d", CompareOptions(n_boot=1000))
    assert four.pairs == 6 and not four.inline


def test_the_key_follows_the_request_and_the_data_revision() -> None:
    req = CompareRequest(RUNS, "disposition", CompareOptions())
    assert req.key((1, 2)) == req.key((1, 2))
    assert req.key((1, 2)) != req.key((1, 3))
    other = CompareRequest(RUNS[::-1], "disposition", CompareOptions())
    assert other.key((1, 2)) != req.key((1, 2))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"runs": ["a", "b"]}, "needs runs, instrument and options"),
        ({"runs": ["a"], "instrument": "x", "options": {}}, "at least two runs"),
        ({"runs": ["a", "b"], "instrument": "x", "options": {"bogus": 1}}, "unknown 'bogus'"),
    ],
)
def test_a_malformed_request_is_one_sentence(args: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        CompareRequest.from_args(args)


def test_the_compare_job_writes_what_the_service_returns(session: Session, workspace: Path) -> None:
    from study.disposition.runs import add_arms, run_study

    add_arms("cmp", dose_pair(), session=session)
    run_study(
        "cmp",
        battery_doc(5),
        session=session,
        judge=ModelSpec.parse("sim/default"),
        repeat_share=0.0,
    )
    session.commit()
    req = CompareRequest(RUNS, "disposition", CompareOptions(n_boot=300, top_items=5))
    direct = compare_runs(req.runs, instrument=req.instrument, session=session,
                          options=req.options)  # fmt: skip
    out = run_compare_job({"request": req.to_args(), "digest": "abc123"}, session=session,
                          settings=resolve_settings())  # fmt: skip
    assert out == {"compare": "abc123", "rows": len(direct.rows)}
    folder = job_folder(workspace, "abc123")
    written = read_job_comparison(folder)
    assert written is not None and written.to_dict() == direct.to_dict()
    assert (folder / "comparison" / "report.html").is_file()
    with pytest.raises(InputError, match="digest"):
        run_compare_job({"request": req.to_args(), "digest": "../x"}, session=session,
                        settings=resolve_settings())  # fmt: skip
