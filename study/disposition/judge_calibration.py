"""The disposition classifier against the human majority of its Label Studio check.

The report's "Judge–human calibration" section: the ``disposition_check`` study's items of
this disposition study, the classifier's stored category beside the annotators' 2-of-3
majority (:func:`study.judge_robustness.human_table.calibration_table`), through the same
statistics as ``driftlens judges calibration`` (κ and α with bootstrap intervals, per-class
TPR / TNR with Wilson intervals, the confusion matrix, the disagreements first). "Not
assessed" with the reason while there is no such study or no item with both labels.
"""

from __future__ import annotations

from typing import Any

TITLE = "Judge–human calibration (classifier)"
STUDY = "disposition_check"


def classifier_calibration(
    study: str, *, session: Any, bootstrap: int = 2000, seed: int = 0
) -> tuple[str, ...]:
    """The section's plain lines (escaped by the report writers)."""
    from study.judge_robustness.human_section import calibration_section_lines

    return calibration_section_lines(
        STUDY,
        session=session,
        judge_noun="classifier",
        push_hint=(
            f"driftlens annotate push {STUDY} --select disposition={study}, then annotate apply"
        ),
        where={"study": study},
        bootstrap=bootstrap,
        seed=seed,
    )


def calibration_sections(lines: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The section as HTML parts and Markdown parts."""
    from study.report.html import esc
    from study.report.markdown import md_escape

    html = [f"<h2>{esc(TITLE)}</h2>", *(f"<p>{esc(line)}</p>" for line in lines)]
    return html, [f"## {md_escape(TITLE)}\n", *(md_escape(line) + "\n" for line in lines)]
