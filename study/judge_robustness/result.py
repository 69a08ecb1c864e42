"""What ``judges robustness`` keeps for one run, and reading it back (pure data, no judge).

Apart from :mod:`study.judge_robustness.service` so an instrument's analysis can show
the kept result without importing the adapters that re-judge (they import the analysis).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from sqlmodel import Session

from storage.repo.meta import get_meta
from study.json_values import json_ready

VERSION = 1


@dataclass(frozen=True)
class JudgeLine:
    """One judgement column: its flip rate against the stored one and its own interval."""

    judge: str
    kind: str  # "stored", "resample" or "alternative"
    flip_rate: float | None
    mean: float
    ci_low: float
    ci_high: float
    conclusion: str


@dataclass(frozen=True)
class RobustnessResult:
    """What ``judges robustness`` found for one run (JSON via :meth:`to_dict`)."""

    instrument: str
    run: str
    primary: str
    alternatives: tuple[str, ...]
    resamples: int
    n_items: int
    strata: dict[str, int]
    measure: str
    midpoint: float
    mean: float
    judge_free: tuple[float, float]
    judge_inclusive: tuple[float, float]
    judge_share: float
    resample_flip_rate: float | None
    lines: tuple[JudgeLine, ...]
    conclusion_flips: tuple[str, ...]
    bootstrap: int
    seed: int
    notes: tuple[str, ...] = ()
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN becomes ``null``)."""
        out: dict[str, Any] = json_ready(asdict(self))
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RobustnessResult:
        """Inverse of :meth:`to_dict`."""
        return cls(
            **{
                **d,
                "alternatives": tuple(d["alternatives"]),
                "judge_free": tuple(d["judge_free"]),
                "judge_inclusive": tuple(d["judge_inclusive"]),
                "lines": tuple(JudgeLine(**ln) for ln in d["lines"]),
                "conclusion_flips": tuple(d["conclusion_flips"]),
                "notes": tuple(d.get("notes", ())),
            }
        )

    @property
    def widths(self) -> tuple[float, float]:
        """``(judge-free, judge-inclusive)`` interval widths."""
        return (
            self.judge_free[1] - self.judge_free[0],
            self.judge_inclusive[1] - self.judge_inclusive[0],
        )


def meta_key(instrument: str, run: str) -> str:
    """Where the result of one run is kept."""
    return f"judge_robustness:{instrument}:{run}"


def stored_robustness(instrument: str, run: str, *, session: Session) -> RobustnessResult | None:
    """The kept result of ``run``, or ``None`` when robustness was not assessed."""
    raw = get_meta(meta_key(instrument, run), session=session)
    if raw is None:
        return None
    data = json.loads(raw)
    return RobustnessResult.from_dict(data) if data.get("version") == VERSION else None
