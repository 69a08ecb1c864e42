"""The tier-2 claim writer's stored settings in the sources report's provenance, and a claim
set whose writer's settings are mixed refused in one sentence (run and report)."""

from __future__ import annotations

import re
from pathlib import Path

from sqlmodel import Session, select

from storage.models import SourceClaim, SourceRun
from study.judge_settings import settings_text
from study.sources.items import items_to_jsonl, shipped_items


def _plain(path: Path) -> str:
    """A Markdown report's text without its backslash escapes."""
    return re.sub(r"\\(.)", r"\1", path.read_text(encoding="utf-8"))


def _items(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text(items_to_jsonl(shipped_items()[:3]), encoding="utf-8")
    return path


def test_the_writer_settings_are_the_reports_provenance_and_a_mix_is_refused(
    cli, session: Session, tmp_path: Path
) -> None:
    items = _items(tmp_path)
    res = cli("sources", "claims", "--model", "sim/default", "--items", str(items),
              "--out", str(tmp_path / "c.jsonl"), "--set", "draft")  # fmt: skip
    assert res.exit_code == 0, res.output
    written = session.exec(select(SourceClaim)).first()
    assert written is not None and written.settings is not None
    base = ("sources", "run", "--model", "sim/src-paper", "--items", str(items),
            "--bootstrap", "200", "--tier", "1")  # fmt: skip
    run = (*base, "--tier", "2")
    res = cli(*run, "--claims-set", "draft", "--run", "t2", "--out", str(tmp_path / "r"))
    assert res.exit_code == 0, res.output
    md = _plain(tmp_path / "r" / "report.md")
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    line = settings_text(written.settings)
    assert "prompt_hash" in line and "seed 0" in line and "temperature 0.0" in line
    assert "## Judge settings (provenance)" in md
    assert "sim/default (tier-2 claims, set draft)" in md and line in md
    assert "Judge settings (provenance)" in html and "set draft" in html
    # a tier-1 run has no claim writer; a claims file never stored is said to be unrecorded
    res = cli(*base, "--run", "t1", "--out", str(tmp_path / "r1"))
    assert res.exit_code == 0, res.output
    assert "asserts no tier-2 claim" in _plain(tmp_path / "r1" / "report.md")
    # one of the writer's claims re-written under another temperature: a mix
    written.settings = {**written.settings, "temperature": 0.7}
    session.add(written)
    session.commit()
    res = cli("sources", "report", "--run", "t2", "--out", str(tmp_path / "again"))
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "mix judge settings" in res.output and "sim/default" in res.output
    assert not (tmp_path / "again").exists()
    res = cli(*run, "--claims-set", "draft", "--run", "t3", "--out", str(tmp_path / "r3"))
    assert res.exit_code != 0 and "mix judge settings" in res.output
    assert "Traceback" not in res.output
    session.expire_all()
    assert session.exec(select(SourceRun).where(SourceRun.name == "t3")).first() is None


def test_claims_from_a_file_are_not_recorded(cli, tmp_path: Path) -> None:
    items = _items(tmp_path)
    claims = tmp_path / "c.jsonl"
    res = cli("sources", "claims", "--model", "sim/default", "--items", str(items),
              "--out", str(claims), "--set", "draft")  # fmt: skip
    assert res.exit_code == 0, res.output
    edited = claims.read_text().replace("[answer]", "[answer], some say,", 1)
    claims.write_text(edited, encoding="utf-8")
    res = cli("sources", "run", "--model", "sim/src-paper", "--items", str(items),
              "--tier", "2", "--claims", str(claims), "--bootstrap", "200",
              "--out", str(tmp_path / "r"))  # fmt: skip
    assert res.exit_code == 0, res.output
    md = _plain(tmp_path / "r" / "report.md")
    assert "from a claims file, not a stored claim set: not recorded" in md
