"""The usable-share rule every instrument applies before it states a finding.

A study is read from what its measurements could be read from: letters read from
logprobs, replies the classifier parsed, rubric verdicts the judge returned. When too few
were usable (an endpoint without logprobs, a judge whose replies do not parse), whatever
the rest says is no finding: the instrument reports *not assessable* with the share, and
never a significance, an equivalence, a behaviour type or a tier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Below this share of usable measurements a study is not assessable.
USABLE_SHARE_MIN = 0.8


@dataclass(frozen=True)
class Usable:
    """How many of a study's measurements could be used.

    Attributes:
        usable: Measurements that were read (parsed, letter-read, judged).
        total: Measurements asked for.
        what: What a measurement is, plural (``"probes letter-read"``).
        threshold: The share needed (:data:`USABLE_SHARE_MIN`).
    """

    usable: int
    total: int
    what: str
    threshold: float = USABLE_SHARE_MIN

    @property
    def share(self) -> float:
        """``usable / total`` (0 for an empty study)."""
        return self.usable / self.total if self.total else 0.0

    @property
    def assessable(self) -> bool:
        """Whether the share reaches the threshold."""
        return self.total > 0 and self.share >= self.threshold

    @property
    def sentence(self) -> str:
        """``not assessable: …`` (or the share when assessable), one sentence."""
        head = f"{self.usable} of {self.total} {self.what} ({self.share:.0%})"
        if self.assessable:
            return f"{head}; at least {self.threshold:.0%} needed"
        return (
            f"not assessable: only {head}, below the {self.threshold:.0%} needed; no "
            "significance, equivalence, behaviour type or tier is reported"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object stored with a result."""
        return {
            "usable": self.usable,
            "total": self.total,
            "share": self.share,
            "threshold": self.threshold,
            "what": self.what,
            "assessable": self.assessable,
            "sentence": self.sentence,
        }
