"""The toy instrument's human study kind ``coin_check``: is each item a yes/no question?

It registers with the generic Label Studio layer (:mod:`annotation.kinds`) like every
instrument's kinds: a spec, a label config, a task builder from a selection (``items=FILE``,
default the shipped sample; ``run=NAME``: the items a stored run answered) and an apply step
whose result type is :class:`CoinCheckResult`. Every shipped item is a yes/no question: the
simulated annotator pool's truth (:func:`annotation.simulated.register_truth`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session

from annotation.aggregate import AggregationConfig, StudyAggregate
from annotation.kinds import ApplyResult, register_kinds
from annotation.selection import Selection, TaskSpec
from annotation.simulated import register_truth
from annotation.studies import VOTE_CHOICES, QuestionSpec, StudySpec
from storage.repo.instrument_runs import require_instrument_run, stored_keys
from tests.toy_instrument.items import SAMPLE, read_items
from tests.toy_instrument.store import INSTRUMENT

CONFIGS = Path(__file__).resolve().parent / "configs"
SPECS = {
    "coin_check": StudySpec(
        name="coin_check",
        title="Coin check (toy)",
        summary="Can the question be answered yes or no?",
        questions=(QuestionSpec("yes_no", "A yes/no question?", VOTE_CHOICES[:2]),),
    )
}


@dataclass(frozen=True)
class CoinCheckResult(ApplyResult):
    """The items two of three annotators call yes/no questions, and those they do not."""

    yes_no: tuple[str, ...] = ()
    not_yes_no: tuple[str, ...] = ()


def _tasks(sel: Selection, session: Session) -> list[TaskSpec]:
    items = read_items(Path(sel.items) if sel.items else SAMPLE)
    if sel.run is not None:
        row = require_instrument_run(INSTRUMENT, sel.run, session=session)
        assert row.id is not None
        answered = {i for i, _ in stored_keys(row.id, session=session)}
        items = [it for it in items if it.id in answered]
    return [TaskSpec(f"coin:{it.id}", {"question": it.question, "id": it.id}) for it in items]


def _apply(agg: StudyAggregate, session: Session, config: AggregationConfig) -> CoinCheckResult:
    labels = {}
    for it in agg.items:
        o = it.outcome("yes_no")
        labels[it.key] = o.label if o is not None else None
    return CoinCheckResult(
        agg.study,
        agg,
        yes_no=tuple(sorted(k for k, v in labels.items() if v == "yes")),
        not_yes_no=tuple(sorted(k for k, v in labels.items() if v == "no")),
    )


register_kinds(SPECS, CONFIGS, coin_check=(_tasks, _apply, CoinCheckResult))
register_truth("coin_check", lambda data: {"yes_no": "yes"})
