"""The Runs page launches a run and shows responses side by side with untrusted text inert."""

from __future__ import annotations

from sqlmodel import func, select

from storage.models import GenerationRun, ModelSpecRow, Question, Response, StepLabel
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.app.apptest_support import open_page, unescape
from tests.study.jobs_support import wait_for_jobs

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"


def test_launch_a_simulated_run_as_a_job_and_browse_it() -> None:
    at = open_page("runs.py")
    assert "No runs yet" in at.info[0].value
    at.text_input[1].set_value("page-run")
    at.text_input[2].set_value("age")
    at.number_input[0].set_value(1)
    next(b for b in at.button if b.label == "Generate and label").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = wait_for_jobs(resolve_settings())[0]  # a background process, not the page run
    assert (job.kind, job.state, job.scope) == ("generate", "done", {"run": "page-run"})
    assert "--label" in job.argv and job.stage == "labeling page-run"
    at.run()
    assert "page-run" in unescape(at.success[0].value)
    with open_workspace_session(resolve_settings()) as session:
        assert session.exec(select(func.count()).select_from(StepLabel)).one() > 0
    assert int(at.metric[0].value) == 48 * (1 + 6)  # baseline + six age stimuli, one sample
    assert any("SIMULATED" in e.value for e in at.error)


def test_untrusted_question_and_response_render_as_inert_text() -> None:
    settings = resolve_settings()
    with open_workspace_session(settings) as session:
        question = Question(external_id="xss-1", text=f"Which is better? {SCRIPT}")
        spec = ModelSpecRow(spec="sim/default", provider="sim", model="default", simulated=True)
        session.add_all([question, spec])
        session.flush()
        assert spec.id is not None and question.id is not None
        run = GenerationRun(name="xss", model_spec_id=spec.id, prompt_version="steps-v1")
        session.add(run)
        session.flush()
        assert run.id is not None
        for condition, cls, step in (
            ("baseline", "none", f"Weigh the cost first. {IMG}"),
            (
                "attribute/age/1",
                "attribute",
                f"Think about feelings.\n\n[x](javascript:alert(1)) {IMG}",
            ),
        ):
            session.add(
                Response(
                    run_id=run.id,
                    question_id=question.id,
                    condition=condition,
                    condition_class=cls,
                    text=step,
                    steps=[step],
                    answer=IMG,
                    parse_status="no_answer",
                )
            )
    from ontology.versions import seed_ontologies
    from study.reasoning.trajectories import label_run

    with open_workspace_session(settings) as session:
        seed_ontologies(session=session)
        label_run("xss", "keywords", session=session)
        assert session.exec(select(Response)).all()
    at = open_page("runs.py")
    assert not at.exception
    sources = " ".join(m.value for m in at.markdown)
    # Markdown text is backslash-escaped, our HTML blocks HTML-escaped: no raw tag anywhere.
    assert "\\<script\\>" in sources and SCRIPT not in sources
    assert "&lt;img src=x onerror=alert(1)&gt;" in sources and IMG not in sources
    assert "<br><br>" in sources  # the blank line stayed inside the HTML block


def test_run_and_question_in_the_url_open_a_linked_view() -> None:
    from streamlit.testing.v1 import AppTest

    from tests.app.apptest_support import APP

    with open_workspace_session(resolve_settings()) as session:
        spec = ModelSpecRow(spec="sim/default", provider="sim", model="default", simulated=True)
        questions = [Question(external_id=f"link-{i}", text=f"Question {i}?") for i in range(2)]
        session.add_all([spec, *questions])
        session.flush()
        assert spec.id is not None
        question_ids = [q.id for q in questions if q.id is not None]
        for name in ("first", "second"):
            run = GenerationRun(name=name, model_spec_id=spec.id, prompt_version="steps-v1")
            session.add(run)
            session.flush()
            assert run.id is not None
            for question_id in question_ids:
                session.add(
                    Response(
                        run_id=run.id,
                        question_id=question_id,
                        condition="baseline",
                        condition_class="none",
                        text="t",
                        steps=["Think."],
                        answer="a",
                        parse_status="ok",
                    )
                )
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/runs.py")
    at.query_params["run"] = "second"
    at.query_params["question"] = "link-1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox[0].value == "second"
    assert at.selectbox[1].value == "link-1"
    assert any("Question 1?" in m.value for m in at.markdown)
    # Picking another run rewrites the address bar (it used to keep ?run=second).
    at.selectbox[0].select("first").run()
    assert at.query_params["run"] in ("first", ["first"])
    assert at.query_params["question"] in ("link-1", ["link-1"])  # same question, other run


def test_an_empty_or_comma_run_name_is_said_beside_the_field_and_the_button_waits() -> None:
    at = open_page("runs.py")
    for bad, needle in (("", "must not be empty"), ("a,b", "comma")):
        at.text_input[1].set_value(bad).run()
        button = next(b for b in at.button if b.label == "Generate and label")
        assert button.disabled
        assert any(needle in e.value for e in at.error), [e.value for e in at.error]
    at.text_input[1].set_value("fine").run()
    assert not next(b for b in at.button if b.label == "Generate and label").disabled
    with open_workspace_session(resolve_settings()) as session:
        assert session.exec(select(GenerationRun)).all() == []
