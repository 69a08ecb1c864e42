"""The loop's exports keep untrusted text as text (HTML escaped, CSV formulas defused)."""

from __future__ import annotations

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
