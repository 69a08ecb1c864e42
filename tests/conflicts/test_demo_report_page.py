"""``driftlens conflicts demo`` end to end and the case viewer page.

The report's escaping of hostile model and judge names is tested in ``test_report_hostile``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlmodel import select
from typer.testing import Result

from storage.models import Response
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.app.apptest_support import open_page

SCRIPT = "<script>alert(1)</script>"


def test_demo_report_and_case_viewer(cli: Callable[..., Result], workspace: Path) -> None:
    res = cli("conflicts", "demo", "--bootstrap", "200")
    assert res.exit_code == 0, res.output
    assert "SIMULATED DATA" in res.output
    assert "D4 (clarification) for every model and judge: yes" in res.output
    report = workspace / "reports" / "conflicts"
    html = (report / "conflicts_report.html").read_text()
    assert "Judge agreement" in html and "D6 commitment" in html
    assert (report / "distractor_curve.png").stat().st_size > 1000
    # marked simulated in both documents, and the HTML stands alone (figure embedded)
    md = (report / "conflicts_report.md").read_text()
    assert "SIMULATED DATA" in md and "SIMULATED DATA" in html
    assert "data:image/png;base64," in html and "src='distractor_curve.png'" not in html
    # the exported table is exactly what `conflicts stats` reads
    stats = cli("conflicts", "stats", str(report / "conflict_scores.csv"), "-B", "200")
    assert stats.exit_code == 0, stats.output

    # an answer with markup stays inert in the case viewer
    with open_workspace_session(resolve_settings()) as session:
        row = session.exec(select(Response).where(Response.parse_status == "ok")).first()
        assert row is not None
        row.text = f"Sure. {SCRIPT}"
        session.add(row)
        session.commit()
    at = open_page("conflicts.py")
    assert any("SIMULATED" in e.value for e in at.error)
    assert int(at.metric[0].value) > 0
    for block in at.markdown:
        assert "<script>" not in block.value
    labels = next(s for s in at.selectbox if s.label == "Case").options
    gaps = [float(lbl.rsplit("gap ", 1)[1]) for lbl in labels]
    first_small = next((i for i, g in enumerate(gaps) if g < 2), len(gaps))
    assert all(g >= 2 for g in gaps[:first_small]) and all(g < 2 for g in gaps[first_small:])
