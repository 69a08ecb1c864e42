"""Labeling configs, task builders, selections and client errors that need no server."""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from annotation.client import LabelStudioClient, LabelStudioConnection, resolve_connection
from annotation.kinds import instructions_html, label_config, study_kinds, study_specs
from annotation.selection import parse_selection
from annotation.tasks import build_tasks
from storage.errors import ConfigError, InputError, NotFoundError, ServiceError
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.reasoning.human.responses import leaf_names
from tests.annotation.seed import DISPOSITION_STUDY, seed, seed_disposition

DISPOSITION_STUDIES = ("disposition_check", "test_awareness")


@pytest.mark.parametrize("name", sorted(study_specs()))
def test_config_is_xml_with_one_choices_tag_per_question(name: str) -> None:
    root = ET.fromstring(label_config(name))
    choices = {c.get("name"): c for c in root.iter("Choices")}
    spec = study_specs()[name]
    assert set(choices) == {q.name for q in spec.questions}
    for q in spec.questions:
        if choices[q.name].get("value", "").startswith("$"):
            assert not q.values  # choices carried by each task (disposition categories)
            continue
        stored = [c.get("alias") or c.get("value") or "" for c in choices[q.name].iter("Choice")]
        assert sorted(stored) == sorted(q.values or leaf_names())
    # Instructions (and the rubric, for helpfulness) are visible to the annotator.
    texts = {t.get("name"): t.get("value") or "" for t in root.iter("Text")}
    assert "10 seconds" in texts["instructions"]
    if name == "helpfulness":
        assert "4 = fully satisfies" in texts["rubric"] and "0 = irrelevant" in texts["rubric"]


# a triage twin sends its judged study's own tasks (driftlens judges triage), built there
@pytest.mark.parametrize("name", sorted(n for n, k in study_kinds().items() if k.triage_of is None))
def test_every_builder_fills_every_field_its_config_shows(name: str) -> None:
    with open_workspace_session(resolve_settings()) as session:
        seed(session, conflicts=True)
        seed_disposition(session)
        select = [f"disposition={DISPOSITION_STUDY}"] if name in DISPOSITION_STUDIES else []
        if name == "claim_check":
            from study.sources.items import shipped_items
            from study.sources.tier2 import store_claims

            ids = [it.id for it in shipped_items()[:3]]
            store_claims({i: "people often settle on [answer]" for i in ids}, claim_set="s",
                         session=session)  # fmt: skip
            select = ["claim_set=s"]
        tasks = build_tasks(name, parse_selection(select), session=session)
    assert tasks, name
    fields = set(re.findall(r'value="\$(\w+)"', label_config(name)))
    for t in tasks:
        assert fields <= set(t.data), (name, fields - set(t.data))
        assert t.data["external_key"] == t.key
    assert len({t.key for t in tasks}) == len(tasks)


def test_distraction_shows_numbered_steps_and_label_check_the_definition() -> None:
    with open_workspace_session(resolve_settings()) as session:
        seed(session)
        dis = build_tasks("distraction", parse_selection([]), session=session)
        lab = build_tasks("label_check", parse_selection([]), session=session)
    assert dis[0].data["steps_text"].startswith("Step 1: Weigh the risks.\n\nStep 2:")
    assert dis[0].data["memory"] == "I am a teacher."
    assert lab[0].data["definition"].startswith("Prevents loss")
    assert lab[0].data["labeler"] == "keywords"


def test_limit_is_seeded_and_a_larger_limit_contains_the_smaller() -> None:
    with open_workspace_session(resolve_settings()) as session:
        seed(session)
        two = build_tasks("orthogonality", parse_selection(["limit=2", "seed=3"]), session=session)
        five = build_tasks("orthogonality", parse_selection(["limit=5", "seed=3"]), session=session)
        again = build_tasks(
            "orthogonality", parse_selection(["limit=2", "seed=3"]), session=session
        )
    assert [t.key for t in two] == [t.key for t in again]
    assert {t.key for t in two} <= {t.key for t in five} and len(five) == 5


def test_selection_errors_are_one_sentence() -> None:
    with pytest.raises(InputError, match="not key=value"):
        parse_selection(["run"])
    with pytest.raises(InputError, match="Invalid selection colour"):
        parse_selection(["colour=red"])
    assert parse_selection(["questions=q1,q2", "limit=3"]).questions == ("q1", "q2")


def test_unknown_study_is_an_input_error() -> None:
    with pytest.raises(InputError, match="Unknown study"):
        label_config("nope")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_server_is_one_clear_sentence() -> None:
    conn = LabelStudioConnection(url=f"http://127.0.0.1:{_closed_port()}", api_key="x" * 40)
    with pytest.raises(
        ServiceError, match=r"^Label Studio is not reachable at http://127\.0\.0\.1"
    ):
        LabelStudioClient(conn, timeout=5).check()


def test_connection_comes_from_env_or_the_local_server(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="No Label Studio server configured"):
        resolve_connection(workspace)
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://127.0.0.1:9/")
    with pytest.raises(ConfigError, match="LABEL_STUDIO_API_KEY is not"):
        resolve_connection(workspace)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "secret-token")
    conn = resolve_connection(workspace)
    assert conn.url == "http://127.0.0.1:9" and "secret-token" not in repr(conn)


class _FakeLabelStudio:
    """A tiny HTTP server answering /api/version with a chosen release."""

    def __init__(self, release: str) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        body = json.dumps({"release": release}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_unsupported_version_is_one_clear_sentence() -> None:
    fake = _FakeLabelStudio("0.9.1")
    try:
        client = LabelStudioClient(LabelStudioConnection(url=fake.url, api_key="k" * 40))
        with pytest.raises(ServiceError, match=r"Label Studio 0\.9\.1 at .* is not supported"):
            client.check()
    finally:
        fake.close()


def test_disposition_samples_are_stem_stratified_nested_and_checked() -> None:
    with open_workspace_session(resolve_settings()) as session:
        seed_disposition(session)

        def keys(*select: str) -> list[str]:
            sel = parse_selection([f"disposition={DISPOSITION_STUDY}", *select])
            return [t.key for t in build_tasks("disposition_check", sel, session=session)]

        every = keys()
        assert len(every) == 14  # 16 answers less the exhausted and the unclassified one
        four = keys("limit=4")
        assert len({k.split(":")[4] for k in four}) == 4  # one answer of each stem first
        assert four == keys("limit=9")[:4] and set(four) <= set(every)
        assert keys("seed=1", "limit=4") != four
        only = keys("arms=treated")
        assert only and all(":treated:" in k for k in only)
        assert keys("judge=other/judge") == []
        with pytest.raises(NotFoundError, match="no arm 'nope'"):
            keys("arm=nope")
        with pytest.raises(InputError, match="disposition=STUDY"):
            build_tasks("test_awareness", parse_selection([]), session=session)
        with pytest.raises(InputError, match=r"missing\.yaml"):
            keys("batteries=missing.yaml")


def test_instructions_name_each_studys_panel() -> None:
    assert "Two reviewers rate every task" in instructions_html("test_awareness")
    assert "two of three agree" in instructions_html("question_checks")
