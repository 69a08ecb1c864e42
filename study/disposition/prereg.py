"""Pre-registration: an analysis plan fixed before a run, and the scorecard against it.

The plan (YAML) fixes the equivalence bound, the primary comparisons and predicted drift
ranges before any answer is seen::

    version: 1
    study: demo-disposition
    bound_pp: 5
    primary:
      - {battery: self_interest, arm: on-d100}
    predictions:
      - {battery: self_interest, arm: on-d090, low: -15, high: -3}

The report prints every prediction with the measured drift and ``inside`` / ``OUTSIDE``,
and marks every comparison that is neither primary nor predicted *exploratory*.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from storage.yaml_input import parse_yaml_model, read_text_file

DEMO_PLAN_FILE = "demo_plan.yaml"


class Comparison(BaseModel):
    """One (battery, arm) comparison against its group's reference."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    battery: str
    arm: str


class Prediction(Comparison):
    """A predicted drift range in percentage points."""

    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Prediction:
        if self.low > self.high:
            raise ValueError("low must not exceed high")
        return self


class AnalysisPlan(BaseModel):
    """A pre-registered analysis plan (serialisable, versioned)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    study: str
    bound_pp: float = Field(default=5.0, gt=0)
    primary: list[Comparison] = Field(default_factory=list)
    predictions: list[Prediction] = Field(default_factory=list)

    def registered(self) -> set[tuple[str, str]]:
        """Every (battery, arm) the plan names."""
        return {(c.battery, c.arm) for c in [*self.primary, *self.predictions]}


def parse_plan(text: str, *, source: str) -> AnalysisPlan:
    """Parse a plan.

    Raises:
        InputError: YAML or schema problems, naming the file and line.
    """
    return parse_yaml_model(
        AnalysisPlan,
        text,
        source=source,
        expected="an analysis plan is a mapping with study and bound_pp",
        what="analysis plan",
    )


def read_plan(path: Path) -> AnalysisPlan:
    """Read a plan file (see :func:`parse_plan`)."""
    return parse_plan(read_text_file(path, what="analysis plan"), source=str(path))


def demo_plan() -> AnalysisPlan:
    """The plan shipped for the demo study (fixed with the demo's arms, before its runs)."""
    text = resources.files("study.disposition.data").joinpath(DEMO_PLAN_FILE).read_text("utf-8")
    return parse_plan(text, source=DEMO_PLAN_FILE)


def plan_status(drift: pd.DataFrame, plan: AnalysisPlan | None) -> list[str]:
    """Per drift row: ``reference``, ``primary``, ``predicted`` or ``exploratory``."""
    primary = {(c.battery, c.arm) for c in plan.primary} if plan else set()
    predicted = {(c.battery, c.arm) for c in plan.predictions} if plan else set()
    out = []
    for _, r in drift.iterrows():
        key = (r["battery"], r["arm"])
        if r["arm"] == r["reference"]:
            out.append("reference")
        elif key in primary:
            out.append("primary")
        elif key in predicted:
            out.append("predicted")
        else:
            out.append("exploratory")
    return out


def scorecard(drift: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Predicted range vs measured drift: ``inside`` / ``OUTSIDE`` / ``not measured``."""
    rows = []
    for p in plan.predictions:
        hit = drift[(drift["battery"] == p.battery) & (drift["arm"] == p.arm)]
        measured = float(hit["drift_pp"].iloc[0]) if len(hit) else None
        if measured is None or pd.isna(measured):
            verdict = "not measured"
        else:
            verdict = "inside" if p.low <= measured <= p.high else "OUTSIDE"
        rows.append(
            {
                "battery": p.battery,
                "arm": p.arm,
                "predicted": f"[{p.low:g}, {p.high:g}]",
                "measured_pp": measured,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows, columns=["battery", "arm", "predicted", "measured_pp", "verdict"])
