"""The Refinement page shows a stored loop: curve, rewrites table, exports (AppTest)."""

from __future__ import annotations

from llm.specs import ModelSpec
from tests.app.apptest_support import open_page


def _loop(rewriter: str = "sim/rewriter-operational", review: str = "auto") -> int:
    from ontology.refinement import RefineConfig
    from ontology.refinement_loop import refine
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from study.questions import import_sample_questions
    from study.reasoning.generation import GenerationOptions, run_generation

    with open_workspace_session(resolve_settings()) as session:
        import_sample_questions(session=session)
        session.commit()
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"), run="demo", perturbations="filler", samples=1
            ),
            session=session,
        )
        config = RefineConfig(
            run="demo",
            labelers=tuple(f"sim:definitions;seed={s}" for s in (1, 2, 3)),
            rewriter=ModelSpec.parse(rewriter),
            ontology_version="original",
            sample=30,
            max_rounds=2,
            review="pause" if review == "pause" else "auto",
        )
        return refine(config, session=session).loop_id


def test_refinement_page_shows_the_loop_and_its_exports() -> None:
    loop = _loop()
    at = open_page("ontology_refinement.py", params={"loop": str(loop)})
    text = " ".join(m.value for m in at.markdown)
    assert "original@1" in text and "round_limit" in text
    rewrites = at.dataframe[0].value
    assert len(rewrites) >= 1 and {"gain", "low", "high", "decision", "why"} <= set(rewrites)
    labels = {getattr(b, "label", None) for b in at.get("download_button")}
    assert {"Rounds (CSV)", "Rewrites (CSV)", "History (JSON)", "Report (HTML)"} <= labels


def test_refinement_page_computes_the_final_version_tables_on_request() -> None:
    loop = _loop()
    at = open_page("ontology_refinement.py", params={"loop": str(loop)})
    assert not any("Final version" in s.value for s in at.subheader)
    [button] = [b for b in at.button if b.label.startswith("Compute the final version")]
    at = button.click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Final version original@" in s.value for s in at.subheader)
    frames = {c.value: d.value for c, d in zip(at.caption[-3:], at.dataframe[-3:], strict=True)}
    within = frames["Within-model (same labeler, labeled twice)"]
    assert len(within) == 3 and within["within-model agreement %"].between(0, 100).all()
    assert len(frames["Cross-model"]) == 3


def test_refinement_page_without_loops_says_how_to_start_one() -> None:
    at = open_page("ontology_refinement.py")
    assert any("No refinement loop yet" in i.value for i in at.info)


def test_rewrite_page_shows_the_gate_and_asks_why_for_a_rejected_proposal() -> None:
    from sqlmodel import select

    from storage.refinement_models import RefinementDecision
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    _loop("sim/rewriter-blur", review="pause")
    with open_workspace_session(resolve_settings()) as session:
        row = session.exec(select(RefinementDecision)).one()
        proposal, round_id = row.proposal_id, row.iteration + 1
    at = open_page(
        "ontology_rewrite.py", params={"round": str(round_id), "proposal": str(proposal)}
    )
    texts = " ".join(t.value for t in at.text)
    assert "verdict: rejected" in texts and "labels an accept would change" in texts
    assert "impact: run demo" in texts
    assert any(t.label.startswith("Why accept what the gate rejected") for t in at.text_input)


def test_a_stopped_loop_is_resumed_from_the_page() -> None:
    from sqlmodel import select

    from storage.job_models import Job
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from tests.study.jobs_support import wait_for_jobs

    loop = _loop()
    argv = ["ontology", "refine", "--run", "demo", "--labelers",
            "sim:definitions;seed=1,sim:definitions;seed=2,sim:definitions;seed=3",
            "--rewriter", "sim/rewriter-operational", "--ontology-version", "original",
            "--sample", "30", "--max-rounds", "3"]  # fmt: skip
    settings = resolve_settings()
    with open_workspace_session(settings) as session:
        # a page job the user stopped (the page's Stop: a pause)
        job = Job(kind="ontology refine", title="Refinement loop on demo", argv=argv,
                  scope={"run": "demo"}, host="elsewhere", pid=1, state="cancelled")  # fmt: skip
        session.add(job)
    at = open_page("ontology_refinement.py", params={"loop": str(loop)})
    resume = [b for b in at.button if b.label.startswith("Resume")]
    assert [b.label for b in resume] == ["Resume"]  # the job panel's, for this page's kind
    resume[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    jobs = wait_for_jobs(settings)
    assert jobs[0].state == "done" and list(jobs[0].argv) == argv, jobs[0].error
    # (that the same command goes on from the loop's last stored round is
    # tests/ontology/test_refinement_resume.py's SIGKILL test)
    with open_workspace_session(settings) as session:
        assert session.exec(select(Job).where(Job.id == 1)).one().resumed_by == jobs[0].id
    at.run()
    assert not [b for b in at.button if b.label.startswith("Resume")]  # nothing left to resume
