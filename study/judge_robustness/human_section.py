"""A report's "Judge–human calibration" section, for any study kind with a judge.

The study's calibration table (:func:`.human_table.calibration_table`, narrowed to the
report's own items) through the statistics of ``driftlens judges calibration`` (κ, weighted
κ and α with bootstrap intervals, per-class TPR / TNR with Wilson intervals, the confusion
matrix, the bias on an ordinal scale, the disagreements first). "Not assessed" with the
reason while there is no such study or no item with both labels. The disposition report
(classifier) and the conflicts report (rubric) show it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from sqlmodel import Session


def calibration_section_lines(
    study: str,
    *,
    session: Session,
    judge_noun: str,
    push_hint: str,
    where: Mapping[str, str | Collection[str]] | None = None,
    bootstrap: int = 2000,
    seed: int = 0,
) -> tuple[str, ...]:
    """The section's plain lines (the report writers escape them).

    Args:
        study: the Label Studio study kind (``conflict_rubric`` …).
        session: the workspace session.
        judge_noun: what the judge is called in the report ("classifier", "rubric judge").
        push_hint: the command that makes the study, for the "Not assessed" line.
        where: keep the items whose task payload has these values (one value or a set).
        bootstrap: the statistics' bootstrap replicates.
        seed: their seed.
    """
    from storage.errors import InputError, NotFoundError
    from study.judge_robustness.calibration import calibration_lines
    from study.judge_robustness.study_calibration import calibrate_study

    try:
        cal = calibrate_study(study, session=session, where=where, bootstrap=bootstrap, seed=seed)
    except NotFoundError:
        return (f"Not assessed: no human check of the {judge_noun} ({push_hint}).",)
    except InputError as exc:
        return (f"Not assessed: {exc}",)
    got, run = cal.table, cal.run
    head = (
        f"The {judge_noun} ({got.judge}) against the human majority of study {study}: "
        f"{got.no_majority} items without a majority and {got.no_judge_label} without a "
        f"{judge_noun} label are left out."
    )
    return (head, *calibration_lines(run))
