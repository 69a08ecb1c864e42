"""Defect A: every stored analysis keeps its own report folder (never shared, never replaced)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlmodel import col, select
from typer.testing import Result

from ontology.versions import document, get_version, new_version, replace_definitions
from storage.models import Analysis
from storage.paths import resolve_stored_path
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.analysis._sim_workspace import LABELER, RUN, build_sim_workspace


def test_three_analyses_of_one_run_leave_three_folders_each_with_its_own_b_and_version(
    cli: Callable[..., Result],
) -> None:
    settings = resolve_settings()
    with open_workspace_session(settings) as session:
        build_sim_workspace(session, n_questions=6, samples=1)
        base = get_version("driftlens", session=session)
        doc = document(base)
        leaf = doc.roots[0].leaves[0]
        new_version(
            base, replace_definitions(doc, {leaf.name: leaf.definition + " Reworded."}),
            session=session,
        )  # fmt: skip
    common = ["analyze", "--run", RUN, "--labeler", LABELER]
    for extra in (
        ["--bootstrap", "200", "--ontology-version", "driftlens@1"],
        ["--bootstrap", "300", "--ontology-version", "driftlens@1"],
        ["--bootstrap", "200", "--ontology-version", "driftlens@2", "--label"],
    ):
        result = cli(*common, *extra)
        assert result.exit_code == 0, result.output
    with open_workspace_session(settings) as session:
        rows = session.exec(select(Analysis).order_by(col(Analysis.id))).all()
        folders = [resolve_stored_path(str(r.out_dir), session=session) for r in rows]
    assert len(rows) == 3 and len(set(folders)) == 3, folders
    expected = [("driftlens@1", 200), ("driftlens@1", 300), ("driftlens@2", 200)]
    for folder, (version, b) in zip(folders, expected, strict=True):
        html = (folder / "report.html").read_text(encoding="utf-8")
        assert f"ontology {version} · core" in html and f"· B = {b} ·" in html, folder
    assert folders[0].name == f"{RUN}-{LABELER}" and folders[1].name == f"{RUN}-{LABELER}-2"


def test_an_out_folder_holding_another_analysis_is_refused_in_one_line(
    cli: Callable[..., Result], workspace: Path
) -> None:
    with open_workspace_session(resolve_settings()) as session:
        build_sim_workspace(session, n_questions=6, samples=1)
    out = workspace / "mine"
    first = cli("analyze", "--run", RUN, "--labeler", LABELER, "-B", "200", "--out", str(out))
    assert first.exit_code == 0, first.output
    before = (out / "stats.json").read_bytes()
    again = cli("analyze", "--run", RUN, "--labeler", LABELER, "-B", "300", "--out", str(out))
    assert again.exit_code != 0
    assert "holds the report of stored analysis 1" in str(again.exception)
    assert (out / "stats.json").read_bytes() == before  # nothing lost
