"""The "Allow self-judging" box of the pages that start labeling, judging or classifying jobs
(issue 36): unticked, the job's command is refused in one line (the page shows it);
ticked, the job's command carries ``--allow-self-judging``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlmodel import select

from app.ui.self_judging import FLAG, self_judging_argv
from tests.app.apptest_support import open_page

GEMMA = "openai-api/gemma/gemma-3-270m"


def _gemma_run() -> None:
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from tests.judges.test_model_roles import _gemma_run as mark_gemma

    with open_workspace_session(resolve_settings()) as session:
        mark_gemma(session)


def _jobs() -> list[tuple[str, list[str], str | None]]:
    from storage.job_models import Job
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    with open_workspace_session(resolve_settings()) as session:
        rows = session.exec(select(Job).order_by(Job.id)).all()  # type: ignore[arg-type]
        return [(r.state, list(r.argv), r.error) for r in rows]


def _ended(timeout_s: float = 180) -> tuple[str, list[str], str | None]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        jobs = _jobs()
        if jobs and jobs[-1][0] != "running":
            return jobs[-1]
        time.sleep(0.5)
    raise AssertionError(f"the job did not end in {timeout_s:g} s: {_jobs()}")


def test_argv_of_the_box_adds_the_flag_once() -> None:
    assert self_judging_argv(["label"], False) == ["label"]
    assert self_judging_argv(["label"], True) == ["label", FLAG]
    assert self_judging_argv(["label", FLAG], True) == ["label", FLAG]


def test_disposition_run_job_carries_the_flag_when_allowed() -> None:
    from llm.specs import ModelSpec
    from study.disposition.setup import run_argv

    judge = ModelSpec.parse(GEMMA)
    assert FLAG not in run_argv("s", judge=judge, batteries=None)
    assert run_argv("s", judge=judge, batteries=None, allow_self_judging=True)[-1] == FLAG


def _start_loop(at: object) -> None:
    """Fill the Refinement page's form with a Gemma labeler on the Gemma run; start it."""
    labelers = next(t for t in at.text_input if t.label.startswith("Labelers"))  # type: ignore[attr-defined]
    labelers.set_value(f"llm:{GEMMA},keywords")
    next(n for n in at.number_input if n.label == "Sample").set_value(3)  # type: ignore[attr-defined]
    next(n for n in at.number_input if n.label == "Max rounds").set_value(1)  # type: ignore[attr-defined]
    next(b for b in at.button if b.label == "Start loop").click().run()  # type: ignore[attr-defined]
    assert not at.exception, [e.value for e in at.exception]  # type: ignore[attr-defined]


def test_refinement_page_refuses_a_self_labeler_unless_the_box_is_ticked(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    # The endpoint variables let the job start (a page checks them first); nothing listens
    # there, and one attempt makes the allowed job's first request end it at once.
    monkeypatch.setenv("GEMMA_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("GEMMA_API_KEY", "test")
    monkeypatch.setenv("DRIFTLENS_MAX_ATTEMPTS", "1")
    _gemma_run()
    at = open_page("ontology_refinement.py")
    assert at.checkbox(key="refine-self-judging").value is False
    _start_loop(at)
    status, argv, error = _ended()
    assert FLAG not in argv and status == "failed", (status, argv)
    assert error is not None and "\n" not in error.strip() and FLAG in error, error
    assert f"labeler {GEMMA} is the model under test" in error

    at.run()
    at.checkbox(key="refine-self-judging").check()
    _start_loop(at)
    status, argv, error = _ended()
    assert argv[-1] == FLAG, argv
    assert FLAG not in (error or ""), error  # past the role check: its own request failed
