"""Build a probe table straight from the source-reliance simulator (no LLM plumbing)."""

from __future__ import annotations

import pandas as pd

from driftlens_core.source_reliance import VARIANTS, parse_variant
from study.sources.sim.probe import LETTERS, Probe, SourcePreset, fixed_wrong, simulate_probe


def probe_table(
    preset: SourcePreset,
    *,
    n_questions: int,
    n_choices: int = 5,
    seed: int = 0,
    model: str | None = None,
    dataset: str = "synthetic",
    tier: str = "1",
    probabilities: bool = True,
) -> pd.DataFrame:
    """One row per (question, variant) answered by ``preset`` (two-phase: bare first)."""
    rows = []
    for qi in range(n_questions):
        key = f"q{qi:05d}"
        gold = (qi * 7 + seed) % n_choices
        bare = simulate_probe(Probe(key, n_choices, gold), preset, seed=seed)
        wrong = fixed_wrong(bare, gold)
        for v in VARIANTS:
            spec = parse_variant(v)
            shown = tuple(
                (
                    "user" if s == "u" else "doc",
                    gold if (spec.user if s == "u" else spec.doc) else wrong,
                )
                for s in spec.order
            )
            ans = (
                bare
                if v == "bare"
                else simulate_probe(Probe(key, n_choices, gold, shown), preset, seed=seed)
            )
            row: dict[str, object] = {
                "model": model or preset.name,
                "dataset": dataset,
                "tier": tier,
                "ordering": spec.ordering,
                "question_id": key,
                "variant": v,
                "choice": ans.letter,
                "correct_choice": LETTERS[gold],
                "wrong_choice": LETTERS[wrong],
            }
            if probabilities:
                pc, pw = ans.probs[gold], ans.probs[wrong]
                row.update(p_correct=pc, p_wrong=pw, p_other=max(0.0, 1.0 - pc - pw))
            rows.append(row)
    return pd.DataFrame(rows).astype({c: str for c in ("tier", "ordering")})
