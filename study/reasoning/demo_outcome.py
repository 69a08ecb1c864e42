"""Reasoning drift's part of ``driftlens demo`` (its plugin's ``cli_demo``).

Runs the whole pipeline (:func:`study.reasoning.demo.run_demo`) into the workspace and says
what it did as a :class:`~driftlens_plugins.DemoOutcome`: the counts of each stage, the
drift table and validity verdicts as text lines, the ontology round, the report and the
stats command to run next. The demo command prints it; nothing here prints.
"""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session

from driftlens_plugins import DemoOutcome, DemoReport, Stage
from storage.safe_text import escape_control
from study.reasoning.demo import DEMO_LABELER, DEMO_MODEL, DEMO_RUN, DemoResult, run_demo
from study.reasoning.drift_summary import tier_rows, tier_table_lines, validity_lines

#: The drift table's title in the demo's output.
TABLE_TITLE = "Drift by condition class (lower = more stable)"


def demo(
    *, session: Session, workspace: Path, bootstrap: int, samples: int, stage: Stage
) -> DemoOutcome:
    """Run reasoning drift's demo into ``workspace`` (resuming what is stored).

    Args:
        session: workspace session (committed along the way).
        workspace: the workspace folder; the report goes to ``reports/demo`` in it.
        bootstrap: cluster-bootstrap replicates of the analysis.
        samples: samples per question and condition.
        stage: gives a progress callback per stage.
    """
    result = run_demo(
        session=session,
        out_dir=workspace / "reports" / DEMO_RUN,
        bootstrap=bootstrap,
        samples=samples,
        stage=stage,
    )
    return outcome_of(result)


def outcome_of(result: DemoResult) -> DemoOutcome:
    """What the demo printed of one run of the pipeline, as plain lines."""
    gen, lab, ana, flt = result.generation, result.labeling, result.analysis, result.filtering
    lines = [
        f"Questions added: {result.questions_added}. LLM filter: {flt.accepted} accepted, "
        f"{flt.rejected} rejected, {flt.errors} unparseable (kept as errors), "
        f"{flt.skipped} screened before.",
        f"Responses: {gen.planned} planned, "
        f"{gen.already_done} already stored, {gen.succeeded} generated now, {gen.failed} failed; "
        f"parse status {dict(sorted(gen.parse_status.items()))}.",
        f"Labeled {lab.labeled_now} responses ({lab.steps_labeled} steps, "
        f"{lab.unmapped_steps} unmapped) with {DEMO_LABELER} under "
        f"{escape_control(lab.ontology_version)}.",
        *tier_table_lines(TABLE_TITLE, *tier_rows(ana, show_model=False)),
        *validity_lines(ana, show_model=False),
    ]
    if result.round is not None:
        lines.append(_round_line(result.round))
    html = Path(ana.files["report_html"]).resolve()
    return DemoOutcome(
        title="Reasoning drift",
        banner="every response comes from the built-in simulator.",
        lines=tuple(lines),
        seconds=tuple(result.seconds.items()),
        reports=(DemoReport("open the report", html),),
        next_lines=(
            (
                "re-run the stats",
                f".venv/bin/driftlens stats {ana.files['drift_csv']} --json stats.json",
            ),
        ),
        footer=(f"Model: {DEMO_MODEL} · core implementation: {ana.provenance.implementation}",),
    )


def _round_line(r: dict[str, object]) -> str:
    """The ontology round's line: labelers, agreement and the most confused pair."""
    confused = r["most_confused"][0] if r["most_confused"] else None  # type: ignore[index]
    labelers = ", ".join(str(x) for x in r["labelers"])  # type: ignore[attr-defined]
    return escape_control(
        f"Ontology round {r['round']}: labelers {labelers}; "
        f"mean pairwise agreement {float(r['mean_pairwise']):.1f}%, "  # type: ignore[arg-type]
        f"Krippendorff alpha {float(r['krippendorff_alpha']):.3f}; "  # type: ignore[arg-type]
        f"most confused pair: {confused}."
    )
