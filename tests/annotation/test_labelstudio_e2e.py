"""End to end against a real Label Studio (``@pytest.mark.labelstudio``).

Push a study, annotate as three users (one too fast, one disagreeing), pull, apply, and
compare every number with an independent computation from Label Studio's own export.
Push and pull twice to prove idempotence; an edit made in Label Studio is picked up; a
wrong token and a stopped server end every command with one clear sentence.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sqlmodel import col, select

from annotation.client import LabelStudioClient, LabelStudioConnection
from annotation.kinds import study_specs
from storage.models import Annotator, CurationVote, HumanAnnotation, Question, StudyTask
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.annotation.conftest import choices, export_project, make_users, users_by_id
from tests.annotation.seed import seed

pytestmark = pytest.mark.labelstudio

QC = study_specs()["question_checks"]
CRITERIA = [q.name for q in QC.agreement_questions]
PASS = {
    "clear": "yes",
    "no_vague_terms": "yes",
    "single_verifiable_answer": "no",
    "answerable_by_restating": "no",
}
UNCLEAR = {**PASS, "clear": "no"}


# ----------------------------------------------------------- independent recomputation


def _alpha_nominal(units: list[list[str]]) -> float:
    """Krippendorff's alpha (nominal) straight from its definition (coincidences)."""
    units = [u for u in units if len(u) >= 2]
    n = sum(len(u) for u in units)
    d_o = (
        sum(
            sum(1 for i, a in enumerate(u) for j, b in enumerate(u) if i != j and a != b)
            / (len(u) - 1)
            for u in units
        )
        / n
    )
    totals = Counter(v for u in units for v in u)
    d_e = (n * n - sum(c * c for c in totals.values())) / (n * (n - 1))
    return 1.0 - d_o / d_e


def _independent(conn: LabelStudioConnection, project_id: int) -> dict[str, Any]:
    """Labels, unanimity, alpha and disagreement from Label Studio's JSON export."""
    emails = users_by_id(conn)
    items: dict[str, dict[str, dict[str, str]]] = {}
    for task in export_project(conn, project_id):
        key = task["data"]["external_key"]
        votes: dict[str, dict[str, str]] = {c: {} for c in CRITERIA}
        for ann in task["annotations"]:
            if ann.get("was_cancelled") or (ann.get("lead_time") or 0) < 10:
                continue
            who = ann["completed_by"]
            who = emails[who["id"] if isinstance(who, dict) else who]
            for r in ann["result"]:
                votes[r["from_name"]][who] = r["value"]["choices"][0]
        items[key] = votes
    units = [list(v.values()) for votes in items.values() for v in votes.values()]
    pairable = [u for u in units if len(u) >= 2]
    labels = {}
    for key, votes in items.items():
        for c, v in votes.items():
            top = Counter(v.values()).most_common()
            label = top[0][0] if top and top[0][1] >= 2 else None
            labels[(key, c)] = (label, len(v) >= 3 and len(set(v.values())) == 1, v)
    return {
        "alpha": _alpha_nominal(units),
        "disagreement": sum(1 for u in pairable if len(set(u)) > 1) / len(pairable),
        "labels": labels,
    }


# ----------------------------------------------------------------------------- tests


def _annotate(
    client: LabelStudioClient, task_ids: dict[str, int], users: list[tuple[int, str]]
) -> dict[str, int]:
    """Three users answer every question; returns annotation id per (key, user index)."""
    (u1, _), (u2, _), (u3, _) = users
    plan = {
        # all three pass on every criterion -> core
        "question:q0": [(u1, PASS, 31.0), (u2, PASS, 42.5), (u3, PASS, 18.0)],
        # u3 disagrees on "clear" -> relaxed
        "question:q1": [(u1, PASS, 25.0), (u2, PASS, 12.0), (u3, UNCLEAR, 40.0)],
        # u1 answers in 4 s (dropped); the two others pass -> relaxed (not three votes)
        "question:q2": [(u1, UNCLEAR, 4.0), (u2, PASS, 33.0), (u3, PASS, 21.0)],
        # two say unclear -> out of the benchmark
        "question:q3": [(u1, UNCLEAR, 15.0), (u2, UNCLEAR, 19.0), (u3, PASS, 27.0)],
    }
    ids = {}
    for key, votes in plan.items():
        for i, (user, answers, lead) in enumerate(votes):
            ids[f"{key}#{i}"] = client.create_annotation(
                task_ids[key],
                result=choices(answers, "question"),
                completed_by=user,
                lead_time=lead,
            )
    return ids


def _snapshot() -> list[tuple[Any, ...]]:
    with open_workspace_session(resolve_settings()) as s:
        anns = [
            (
                a.ls_annotation_id,
                a.study_task_id,
                a.annotator_id,
                a.result,
                a.lead_time,
                a.ls_created_at,
                a.ls_updated_at,
                a.pulled_at,
            )
            for a in s.exec(select(HumanAnnotation).order_by(col(HumanAnnotation.ls_annotation_id)))
        ]
        tasks = [(t.external_key, t.ls_task_id) for t in s.exec(select(StudyTask))]
        return [*anns, *tasks]


def test_question_checks_end_to_end(
    run_cli: Any, ls_connection: LabelStudioConnection, ls_client: LabelStudioClient
) -> None:
    with open_workspace_session(resolve_settings()) as s:
        seed(s)

    first = run_cli("annotate", "push", "question_checks", "--json")
    assert first.code == 0, first.err
    pushed = first.json()
    assert pushed["project_created"] is True
    assert (pushed["selected"], pushed["imported"], pushed["already_present"]) == (4, 4, 0)
    project_id = pushed["project_id"]

    again = run_cli("annotate", "push", "question_checks", "--json").json()
    assert (again["project_id"], again["imported"], again["already_present"]) == (project_id, 0, 4)
    assert again["project_created"] is False
    tasks = ls_client.list_tasks(project_id)
    assert len(tasks) == 4  # nothing was imported twice
    task_ids = {t.data["external_key"]: t.id for t in tasks}

    users = make_users(ls_client)
    ann_ids = _annotate(ls_client, task_ids, users)

    pulled = run_cli("annotate", "pull", "question_checks", "--json")
    assert pulled.code == 0, pulled.err
    (p1,) = pulled.json()
    assert (p1["annotations"], p1["inserted"], p1["updated"], p1["unchanged"]) == (12, 12, 0, 0)
    before = _snapshot()
    (p2,) = run_cli("annotate", "pull", "--json").json()  # every study: the same one here
    assert (p2["inserted"], p2["updated"], p2["unchanged"]) == (0, 0, 12)
    assert run_cli("annotate", "push", "question_checks", "--json").json()["imported"] == 0
    assert _snapshot() == before  # a second push and pull change nothing

    with open_workspace_session(resolve_settings()) as s:
        stored = {a.ls_user_id: a.email for a in s.exec(select(Annotator))}
        row = s.exec(
            select(HumanAnnotation).where(
                HumanAnnotation.ls_annotation_id == ann_ids["question:q0#1"]
            )
        ).one()
        assert row.lead_time == 42.5 and row.ls_created_at is not None and row.ls_updated_at
        assert row.result == choices(PASS, "question")
    for user_id, email in users:
        assert stored[user_id] == email

    truth = _independent(ls_connection, project_id)
    status = run_cli("annotate", "status", "question_checks", "--json")
    assert status.code == 0, status.err
    st = status.json()
    assert st["study"] == "question_checks" and st["project_id"] == project_id
    assert (st["tasks"], st["annotations"], st["annotators"]) == (4, 12, 3)
    assert sorted(st["annotator_emails"]) == sorted(e for _, e in users)
    assert st["dropped_fast"] == 1 and st["ls_annotations"] == 12
    assert st["krippendorff_alpha"] == pytest.approx(truth["alpha"])
    assert st["disagreement_rate"] == pytest.approx(truth["disagreement"])

    applied = run_cli("annotate", "apply", "question_checks", "--json")
    assert applied.code == 0, applied.err
    result = applied.json()
    assert result["krippendorff_alpha"] == pytest.approx(truth["alpha"])
    assert len(result["items"]) == 4
    for item in result["items"]:
        for c in CRITERIA:
            label, unanimous, votes = truth["labels"][(item["key"], c)]
            got = item["questions"][c]
            assert (got["label"], got["unanimous"], got["votes"]) == (label, unanimous, votes)
    assert result["tiers"] == {"core": 1, "relaxed": 2, "none": 1}
    with open_workspace_session(resolve_settings()) as s:
        tiers = {q.external_id: q.tier for q in s.exec(select(Question))}
        n_votes = len(s.exec(select(CurationVote)).all())
    assert tiers == {"q0": "core", "q1": "relaxed", "q2": "relaxed", "q3": None}
    assert n_votes == 11 * 4

    # An annotator changes her mind in Label Studio: q1 becomes unanimous -> core.
    ls_client.update_annotation(
        ann_ids["question:q1#2"], result=choices(PASS, "question"), lead_time=55.0
    )
    (p3,) = run_cli("annotate", "pull", "question_checks", "--json").json()
    assert (p3["inserted"], p3["updated"], p3["unchanged"]) == (0, 1, 11)
    result = run_cli("annotate", "apply", "question_checks", "--json").json()
    assert result["tiers"] == {"core": 2, "relaxed": 1, "none": 1}
    truth = _independent(ls_connection, project_id)
    assert result["krippendorff_alpha"] == pytest.approx(truth["alpha"])
    assert result["disagreement_rate"] == pytest.approx(truth["disagreement"])
    # The threshold is an option: at 3 s the fast vote counts again.
    loose = run_cli("annotate", "apply", "question_checks", "--json", "--min-lead-time", "3")
    assert loose.json()["dropped_fast"] == 0


def test_deleted_project_is_one_sentence_and_new_project_recovers(
    run_cli: Any, ls_connection: LabelStudioConnection
) -> None:
    import httpx

    with open_workspace_session(resolve_settings()) as s:
        seed(s)
    project_id = run_cli("annotate", "push", "persona_pair", "--json").json()["project_id"]
    httpx.delete(
        f"{ls_connection.url}/api/projects/{project_id}",
        headers={"Authorization": f"Token {ls_connection.api_key}"},
        timeout=60,
    ).raise_for_status()
    for args in (("annotate", "push", "persona_pair"), ("annotate", "pull", "persona_pair")):
        res = run_cli(*args)
        assert res.code != 0
        (line,) = res.err.strip().splitlines()
        assert f"Label Studio project {project_id} no longer exists" in line, line
    fresh = run_cli("annotate", "push", "persona_pair", "--new-project", "--json").json()
    assert fresh["project_id"] != project_id and fresh["imported"] == 4
    assert run_cli("annotate", "pull", "--json").code == 0


def test_every_study_pushes_pulls_and_applies(run_cli: Any, ls_client: LabelStudioClient) -> None:
    with open_workspace_session(resolve_settings()) as s:
        seed(s)
    users = make_users(ls_client)
    answers = {
        "persona_pair": [{"same_answer": v} for v in ("yes", "yes", "no")],
        "orthogonality": [
            {"irrelevant": "yes", "confidence": "0.9"},
            {"irrelevant": "yes", "confidence": "0.7"},
            {"irrelevant": "no", "confidence": "0.6"},
        ],
        "label_check": [
            {"agree": "yes"},
            {"agree": "no", "better_leaf": "Efficiency and resource optimization"},
            {"agree": "yes"},
        ],
        "helpfulness": [{"score": v} for v in ("4", "3", "4")],
        "distraction": [{"step": v} for v in ("no", "no", "2")],
        "acknowledgement": [{"acknowledged": v} for v in ("1", "1", "0")],
    }
    to_name = {
        "persona_pair": "question",
        "orthogonality": "question",
        "label_check": "step",
        "helpfulness": "response",
        "distraction": "response",
        "acknowledgement": "response",
    }
    for study, votes in answers.items():
        res = run_cli("annotate", "push", study, "--select", "limit=2", "--json")
        assert res.code == 0, (study, res.err)
        pushed = res.json()
        assert pushed["imported"] == 2
        tasks = ls_client.list_tasks(pushed["project_id"])
        for task in tasks:
            for (user, _), v in zip(users, votes, strict=True):
                ls_client.create_annotation(
                    task.id, result=choices(v, to_name[study]), completed_by=user, lead_time=20.0
                )
        res = run_cli("annotate", "apply", study, "--json")
        assert res.code == 0, (study, res.err)
        out = res.json()
        assert len(out["items"]) == 2 and out["kept_annotations"] == 6
        if study == "orthogonality":
            # (0.9 + 0.7 + 0.4) / 3 = 0.667 > 0.58
            assert [o["keep"] for o in out["orthogonality"]] == [True, True]
            assert out["orthogonality"][0]["mean_confidence"] == pytest.approx(2 / 3)
        elif study == "label_check":
            assert out["labeler_accuracy"][0]["accuracy"] == 1.0
        elif study == "helpfulness":
            assert out["helpfulness"][0]["value"] == pytest.approx(11 / 3)
        elif study == "distraction":
            assert out["non_distraction"][0]["value"] == 1.0
        elif study == "acknowledgement":
            assert out["acknowledgement"][0]["value"] == 1.0
        elif study == "persona_pair":
            assert all(i["questions"]["same_answer"]["label"] == "yes" for i in out["items"])


def test_wrong_token_is_one_sentence_for_every_command(
    run_cli: Any, ls_connection: LabelStudioConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_workspace_session(resolve_settings()) as s:
        seed(s)
    assert run_cli("annotate", "push", "question_checks").code == 0
    # A legacy-looking token and a JWT-looking one (the SDK treats those differently).
    for token in ("0" * 40, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"):
        monkeypatch.setenv("LABEL_STUDIO_API_KEY", token)
        for args in (
            ("annotate", "push", "question_checks"),
            ("annotate", "pull"),
            ("annotate", "status", "question_checks"),
            ("annotate", "apply", "question_checks"),
            ("annotate", "annotators"),
            ("annotate", "invite"),
        ):
            res = run_cli(*args)
            assert res.code != 0, args
            lines = res.err.strip().splitlines()
            assert len(lines) == 1, (args, res.err)
            assert "rejected the API token" in lines[0], lines[0]
            assert token not in res.err + res.out


def test_local_server_start_push_stop_and_the_stopped_server_message(
    run_cli: Any,
    ls_connection: LabelStudioConnection,
    monkeypatch: pytest.MonkeyPatch,
    local_server_workspace: Any,
) -> None:
    """``driftlens labelstudio start`` alone is enough to push; once stopped, one sentence.

    The server may already be starting in the background (conftest), so that its database
    migration overlaps other tests; ``start`` then finds it running.
    """
    from annotation.server import read_state, server_dir

    workspace = local_server_workspace

    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    with open_workspace_session(resolve_settings()) as s:
        seed(s)
    try:
        started = run_cli("labelstudio", "start")
        assert started.code == 0, started.err
        state = read_state(workspace)
        assert state is not None and state.url.startswith("http://127.0.0.1:")
        mode = (server_dir(workspace) / "server.json").stat().st_mode & 0o777
        assert mode == 0o600
        assert state.token not in started.out + started.err
        assert state.admin_password not in started.out + started.err
        assert run_cli("labelstudio", "status").code == 0
        pushed = run_cli("annotate", "push", "question_checks", "--json")
        assert pushed.code == 0, pushed.err
        assert pushed.json()["imported"] == 4
    finally:
        stopped = run_cli("labelstudio", "stop")
    assert stopped.code == 0 and "stopped" in stopped.out
    assert run_cli("labelstudio", "status").code == 1
    for args in (
        ("annotate", "push", "question_checks"),
        ("annotate", "pull"),
        ("annotate", "status", "question_checks"),
        ("annotate", "apply", "question_checks"),
    ):
        res = run_cli(*args)
        assert res.code != 0, args
        lines = res.err.strip().splitlines()
        assert len(lines) == 1, (args, res.err)
        assert "Label Studio is not reachable at http://127.0.0.1:" in lines[0], lines[0]


def test_the_recomputation_itself_on_a_textbook_case() -> None:
    """The independent alpha above is checked by hand: D_o = 2/9, D_e = 5/9, alpha = 0.6."""
    units = [["y", "y", "y"], ["n", "n", "n"], ["y", "y", "n"]]
    assert _alpha_nominal(units) == pytest.approx(0.6)


def test_push_is_idempotent_beyond_one_page_of_tasks(
    run_cli: Any, ls_client: LabelStudioClient
) -> None:
    """More tasks than one API page (100): the second push must still find them all."""
    with open_workspace_session(resolve_settings()) as s:
        s.add_all([Question(external_id=f"bulk{i:03d}", text=f"Question {i}?") for i in range(230)])
    first = run_cli("annotate", "push", "question_checks", "--json").json()
    assert (first["selected"], first["imported"]) == (230, 230)
    second = run_cli("annotate", "push", "question_checks", "--json").json()
    assert (second["imported"], second["already_present"]) == (0, 230)
    assert len(ls_client.list_tasks(first["project_id"])) == 230


def test_a_project_id_already_recorded_for_another_server_is_released(
    run_cli: Any, ls_connection: LabelStudioConnection
) -> None:
    """Project ids are per server: a workspace that moved servers must still push."""
    from storage.models import Study

    with open_workspace_session(resolve_settings()) as s:
        seed(s)
    first = run_cli("annotate", "push", "helpfulness", "--json").json()["project_id"]
    with open_workspace_session(resolve_settings()) as s:
        # Label Studio numbers projects with AUTOINCREMENT: the next one gets first + 1.
        s.add(Study(name="distraction", ls_project_id=first + 1, ls_url="http://old:8080"))
    for args in (
        ("annotate", "push", "distraction"),
        ("annotate", "pull", "distraction"),
        ("annotate", "status", "distraction"),
    ):
        refused = run_cli(*args)
        assert refused.code != 0, args
        assert "lives on the Label Studio at http://old:8080" in refused.err, refused.err
    res = run_cli("annotate", "push", "distraction", "--new-project", "--json")
    assert res.code == 0, res.err
    assert res.json()["project_id"] == first + 1
    with open_workspace_session(resolve_settings()) as s:
        old = s.exec(select(Study).where(Study.ls_url == "http://old:8080")).one()
        assert old.ls_project_id is None and "was project" in (old.title or "")
