"""Source reliance's human study: the tier-2 claim check.

* ``claim_check``: tier-2 claims of the source-reliance instrument: the share of each
  verdict (supports / wrong_option / leaks / unusable) over the claims whose two kept
  reviews agree, with Wilson 95 % intervals, and the two reviewers' agreement (kappa).

The kind registers itself with :mod:`annotation.kinds` when this module is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session

from annotation.aggregate import AggregationConfig, StudyAggregate
from annotation.agreement import LabelAgreement, label_agreement, nan_to_none
from annotation.kinds import ApplyResult, ApplySummary, SummaryTable, num, register_kinds
from annotation.selection import Selection, TaskSpec
from annotation.studies import QuestionSpec, StudySpec
from storage.errors import InputError
from study.named import by_name

CONFIGS = Path(__file__).resolve().parent / "configs"

#: Verdicts on a tier-2 contextual claim read with its asserted option (study/sources/).
CLAIM_VERDICTS: tuple[str, ...] = ("supports", "wrong_option", "leaks", "unusable")


SPECS: dict[str, StudySpec] = by_name(
    StudySpec(
        name="claim_check",
        title="Tier-2 claim check",
        summary=(
            "Read with its asserted option, does the contextual claim support that option, "
            "point to another option, give the answer away by itself, or is it unusable?"
        ),
        questions=(QuestionSpec("verdict", "Claim verdict", CLAIM_VERDICTS),),
        panel_note="Two reviewers check every claim; a verdict holds when both agree.",
    ),
)


@dataclass(frozen=True)
class ClaimVerdictShare:
    """The share of checked tier-2 claims with one verdict, with its Wilson 95 % interval.

    Counted over the claims whose two kept reviews agree (``n``); ``k`` of them got
    ``verdict``.
    """

    verdict: str
    k: int
    n: int
    share: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class ClaimCheckResult(ApplyResult):
    """Verdict shares of the tier-2 claims and the reviewers' agreement."""

    claim_verdicts: tuple[ClaimVerdictShare, ...] = ()
    claim_agreement: tuple[LabelAgreement, ...] = ()

    def summary(self) -> ApplySummary:
        """Verdict shares of the agreed reviews, and each pair of reviewers' agreement."""
        rows = tuple(
            (v.verdict, str(v.k), str(v.n), num(v.share), f"{num(v.ci_low)}-{num(v.ci_high)}")
            for v in self.claim_verdicts
        )
        title = "Tier-2 claims: verdicts of the agreed reviews (Wilson 95% CI)"
        return ApplySummary(
            lines=tuple(
                f"{la.rater_a} vs {la.rater_b}: {la.n} claims, exact {num(la.exact)}, "
                f"kappa {num(la.kappa)}"
                for la in self.claim_agreement
            ),
            tables=(SummaryTable(title, ("verdict", "claims", "of agreed", "share", "CI"), rows),),
        )


def _claim_check(sel: Selection, session: Session) -> list[TaskSpec]:
    """One task per claim of a stored set, the claim read with the item's correct option.

    The correct option is the one a ``+`` probe asserts; a reviewer sees the question, the
    options, the asserted option and the sentence a probe would show.
    """
    from pathlib import Path

    from storage.repo.sources import source_claims
    from study.sources.items import read_items, shipped_items
    from study.sources.tier2 import PLACEHOLDER

    if not sel.claim_set:
        raise InputError("claim_check needs a claim set: --select claim_set=NAME.")
    rows = source_claims(sel.claim_set, session=session)
    if not rows:
        raise InputError(
            f"No claim set named {sel.claim_set!r}; write one with `driftlens sources claims`."
        )
    items = read_items(Path(sel.items)) if sel.items else shipped_items()
    by_id = {it.id: it for it in items}
    out = []
    for row in rows:
        item = by_id.get(row.item_id)
        if item is None:
            where = sel.items or "the shipped items"
            raise InputError(
                f"Item {row.item_id!r} of claim set {sel.claim_set!r} is not in {where}; "
                "pass the items file with --select items=FILE."
            )
        answer = item.choice_text(item.answer)
        out.append(
            TaskSpec(
                f"claim_check:{sel.claim_set}:{row.item_id}",
                {
                    "question": item.question,
                    "options": "\n".join(
                        f"{k}. {c}" for k, c in zip(item.letters, item.choices, strict=True)
                    ),
                    "asserted": f"{item.answer}. {answer}",
                    "claim": row.claim.replace(PLACEHOLDER, answer),
                    "template": row.claim,
                    "claim_set": sel.claim_set,
                    "item_id": row.item_id,
                },
            )
        )
    return out


def _apply_claim_check(
    agg: StudyAggregate, session: Session, config: AggregationConfig
) -> ClaimCheckResult:
    """Verdict shares over the agreed claims, and the two reviewers' agreement."""
    from driftlens_core.proportions import proportion_interval
    from study.sources.human.kinds import CLAIM_VERDICTS

    pairs: list[tuple[str, str]] = []
    agreed: list[str] = []
    for it in agg.items:
        o = it.outcome("verdict")
        if o is None or o.n_votes < 2:
            continue
        pairs.append((o.votes[0][1], o.votes[1][1]))
        if o.agreeing:
            agreed.append(o.votes[0][1])
    shares = []
    for verdict in CLAIM_VERDICTS:
        p = proportion_interval(sum(v == verdict for v in agreed), len(agreed))
        shares.append(
            ClaimVerdictShare(
                verdict,
                p.k,
                p.n,
                nan_to_none(p.share),
                nan_to_none(p.ci_low),
                nan_to_none(p.ci_high),
            )
        )
    return ClaimCheckResult(
        agg.study,
        agg,
        claim_verdicts=tuple(shares),
        claim_agreement=(label_agreement("reviewer 1", "reviewer 2", pairs),),
    )


register_kinds(
    SPECS,
    CONFIGS,
    claim_check=(_claim_check, _apply_claim_check, ClaimCheckResult),
)
