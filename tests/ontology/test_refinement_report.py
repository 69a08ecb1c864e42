"""The loop's exports keep untrusted text as text (HTML escaped, CSV formulas defused)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from ontology.refinement import RefineResult
from ontology.refinement_report import decision_rows, render_html, to_csv

HOSTILE = "<script>alert(1)</script>"


def _result() -> RefineResult:
    gate = {"gain": 0.1, "low": 0.05, "high": 0.2, "n_heldout": 9}
    return RefineResult(
        loop_id=1,
        status="done",
        stop_reason="target",
        start_version="original@1",
        final_version="original@2",
        rounds=(
            {"iteration": 1, "version": "original@1", "mean_pairwise": 0.35},
            {"iteration": 2, "version": "original@2", "mean_pairwise": 0.85},
        ),
        decisions=(
            {
                "iteration": 1,
                "pair": [HOSTILE, '=HYPERLINK("x")'],
                "attempt": 0,
                "proposal": 1,
                "decision": "accepted",
                "reasons": [HOSTILE],
                "gate": gate,
                "version": "original@2",
            },
        ),
        config={"run": "demo", "labelers": ["a", "b"], "rewriter": HOSTILE},
    )


def test_html_report_escapes_model_and_ontology_text() -> None:
    page = render_html(_result())
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<svg" in page and "<polyline" in page  # the agreement-by-round figure


def test_csv_defuses_formulas() -> None:
    rows = decision_rows(_result())
    rows[0]["pair"] = '=HYPERLINK("x")'
    text = to_csv(rows)
    assert "'=HYPERLINK" in text


def test_final_version_tables_are_escaped_and_said_missing_when_not_computed() -> None:
    from ontology.refinement_validation import FinalTables

    assert "were not computed" in render_html(_result())
    tables = FinalTables(
        final_round=2,
        cross=({"labeler pair": f"{HOSTILE} & b", "final %": 85.0, "start %": 35.0},),
        within=({"labeler": HOSTILE, "within-model agreement %": 91.25, "steps": 10},),
        robustness=({"labeler": "b", "agreement under a paraphrase %": 88.0, "steps": 10},),
        notes=(HOSTILE,),
    )
    page = render_html(_result(), tables)
    assert "<script>" not in page and page.count("&lt;script&gt;") >= 3
    for title in ("Cross-model agreement", "Within-model agreement", "Robustness"):
        assert title in page
    assert "<td>91.2</td>" in page or "<td>91.3</td>" in page


def test_refine_report_writes_the_three_tables_of_the_final_version(
    sim_run: str, cli: Callable[..., Result], tmp_path: Path
) -> None:
    labelers = "sim:definitions;seed=1,sim:definitions;seed=2,sim:definitions;seed=3"
    res = cli("ontology", "refine", "--run", sim_run, "--ontology-version", "original",
              "--labelers", labelers, "--rewriter", "sim/rewriter-operational",
              "--sample", "30", "--max-rounds", "3",
              "--json", str(tmp_path / "loop.json"))  # fmt: skip
    assert res.exit_code == 0, (res.output, res.exception)
    loop = json.loads((tmp_path / "loop.json").read_text(encoding="utf-8"))
    out = tmp_path / "report.html"
    res = cli("ontology", "refine-report", str(loop["loop"]), "--out", str(out))
    assert res.exit_code == 0, (res.output, res.exception)
    page = out.read_text(encoding="utf-8")
    final = page[page.index("<h2>Final version") :]
    assert loop["final_version"] in final
    # the cross table's final column is the last round's pairwise agreement, in %
    last = loop["rounds"][-1]
    for value in last["pairwise"].values():
        assert f"<td>{100 * value:.1f}</td>" in final
    # three labelers, two relabeling tables: six rows with a share in (0, 100]
    within = re.findall(r"within-model ([\d.]+) %", res.output)
    robust = re.findall(r"under a paraphrase ([\d.]+) %", res.output)
    assert len(within) == len(robust) == 3
    # a stochastic labeler labeling twice does not always agree with itself
    assert all(0 < float(v) < 100 for v in within), within
    # the extra labels are stored: a second report labels nothing new and says the same
    again = cli("ontology", "refine-report", str(loop["loop"]), "--out", str(out))
    assert again.exit_code == 0 and again.output == res.output


def test_refine_report_of_an_unknown_loop_is_one_line(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    res = cli("ontology", "refine-report", "99", "--out", str(tmp_path / "r.html"))
    assert res.exit_code != 0
    assert "no refinement loop 99" in str(res.exception)
    assert not (tmp_path / "r.html").exists()
