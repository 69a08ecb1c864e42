"""src-paper: documents lead user-vs-document conflicts, so U%/D% < 1 as in the seed (#23 8).

The whole-study number (U%/D% over six synthetic 500-item studies 0.856, SD 0.08, all
below 1, against 0.97-1.16 before; the seed's mean 0.895) is recorded in docs/sources.md;
these tests check the mechanism exactly and cheaply.
"""

from __future__ import annotations

import pytest

from study.sources.sim.probe import (
    DOC_WEIGHT_PAPER,
    SOURCE_PRESETS,
    Probe,
    SourcePreset,
    _near_leads,
    get_source_preset,
    simulate_probe,
)


def test_doc_weight_shifts_the_leader_on_the_odds_scale_and_nothing_else() -> None:
    paper = get_source_preset("src-paper")
    odds, w = 0.55 / 0.45, DOC_WEIGHT_PAPER / (1 - DOC_WEIGHT_PAPER)
    assert _near_leads("doc", "user", paper) == pytest.approx(odds * w / (1 + odds * w))
    assert _near_leads("user", "doc", paper) == pytest.approx((odds / w) / (1 + odds / w))
    assert _near_leads("doc", "doc", paper) == paper.recency
    for name, p in SOURCE_PRESETS.items():  # every other preset draws exactly as before
        if name != "src-paper":
            assert p.doc_weight == 0.5 and _near_leads("doc", "user", p) == p.recency


def test_src_paper_documents_win_more_conflicts_than_its_unweighted_twin() -> None:
    paper = get_source_preset("src-paper")
    twin = paper.model_copy(update={"doc_weight": 0.5})
    wins = {"paper": 0, "twin": 0}
    for i in range(1500):
        # the document asserts option 1, the user option 2 (gold 0), in both orders
        order = [("user", 2), ("doc", 1)] if i % 2 else [("doc", 1), ("user", 2)]
        probe = Probe(key=f"k{i}", n_choices=4, gold=0, assertions=tuple(order))
        wins["paper"] += simulate_probe(probe, paper).choice == 1
        wins["twin"] += simulate_probe(probe, twin).choice == 1
    # the same draws, a threshold moved toward the document: more document answers
    assert wins["paper"] > wins["twin"] * 1.03


def test_src_paper_reads_the_seeds_mean_u_over_d_below_one() -> None:
    """The headline number: the seed's U%/D% averages 0.895 (39 of 54 cells below 1).

    One 4,000-question study (4 options) from the simulator; its U%/D% varies with the
    draw by SD 0.028 (six seeds: 0.833-0.913, mean 0.880), so the tolerance is ±0.08
    (docs/sources.md). Without the document weight (0.5) a 2,000-question study read
    0.95-1.08 (four seeds); the test above checks that mechanism on its own.
    """
    from study.sources.analysis import analyze_sources_table
    from tests.sources.simtable import probe_table

    def u_over_d(preset: SourcePreset) -> float:
        table = probe_table(preset, n_questions=4000, n_choices=4, seed=0)
        cell = analyze_sources_table(table, bootstrap=200, seed=1).to_dict()
        return float(cell["models"][preset.name]["synthetic"]["u_over_d"])

    paper = get_source_preset("src-paper")
    got = u_over_d(paper)
    assert got < 1 and abs(got - 0.895) <= 0.08, got
