"""The impact preview's tier estimate: label flips at the gate's rate on stored analyses.

Known dose: a ``sim/default`` run has well separated tiers (life events > attributes >
noise), so flipping the rewritten pair's labels at a few per cent leaves their order alone;
a ``sim/null`` run has every dose 0, its tiers are ties that sampling noise orders, and the
same flips reorder them in most draws. With no change at all nothing can reorder.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from sqlmodel import Session

LABELER = "sim:definitions;seed=1"


def _label_and_analyze(cli: Callable[..., Result], run: str, out: Path) -> int:
    from ontology.versions import seed_ontologies
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    with open_workspace_session(resolve_settings()) as s:
        seed_ontologies(session=s)  # `label` alone does not seed the built-in ontologies
        s.commit()
    res = cli("label", "--run", run, "--labeler", LABELER, "--ontology-version", "original@1")
    assert res.exit_code == 0, (res.output, res.exception)
    res = cli("analyze", "--run", run, "--labeler", LABELER, "--ontology-version", "original@1",
              "--out", str(out), "--bootstrap", "200")  # fmt: skip
    assert res.exit_code == 0, (res.output, res.exception)
    from sqlmodel import col, select

    from storage.models import Analysis, GenerationRun
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    with open_workspace_session(resolve_settings()) as s:
        run_id = s.exec(select(GenerationRun.id).where(GenerationRun.name == run)).one()
        return int(
            s.exec(
                select(Analysis.id)
                .where(Analysis.run_id == run_id)
                .order_by(col(Analysis.id).desc())
            ).first()
            or 0
        )


def _top_pair(session: Session, run: str) -> tuple[str, str]:
    """The two most frequent leaves of the run's labels (the pair a rewrite would touch)."""
    from ontology.versions import document, get_version
    from study.reasoning.trajectories import load_trajectories

    doc = document(get_version("original@1", session=session))
    name = {v: k for k, v in doc.symbol_of.items()}
    items = load_trajectories(run, LABELER, session=session, ontology_version="original@1")
    counts = Counter(x for t in items for x in t.symbols)
    (a, _), (b, _) = counts.most_common(2)
    return name[a], name[b]


def test_tiers_move_on_a_null_run_and_hold_on_a_dosed_one(
    sim_run: str, cli: Callable[..., Result], tmp_path: Path
) -> None:
    from ontology.refinement_impact import TierAsk, tier_impacts
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    res = cli("generate", "--model", "sim/null", "--run", "flat", "--samples", "2",
              "--perturbations", "noise,bereavement,age,job_loss")  # fmt: skip
    assert res.exit_code == 0, (res.output, res.exception)
    dosed = _label_and_analyze(cli, sim_run, tmp_path / "dosed")
    null = _label_and_analyze(cli, "flat", tmp_path / "null")
    with open_workspace_session(resolve_settings()) as session:
        pair = _top_pair(session, sim_run)

        def ask(analysis: int, share: float) -> TierAsk:
            return TierAsk(analysis, pair, share, share, share, draws=10, seed=3)

        held = tier_impacts(ask(dosed, 0.05), session=session)
        moved = tier_impacts(ask(null, 0.05), session=session)
        still = tier_impacts(ask(null, 0.0), session=session)
    assert held is not None and moved is not None and still is not None
    assert all(o.endswith("life_event > attribute > noise") for o in held.orders), held
    assert held.changed == 0 and "would not change in 0 of 10 draws" in held.line()
    assert moved.changed >= 3 and "would change in" in moved.line(), moved
    assert still.changed == 0, still  # no label changes: the recomputed order is the stored one


def test_an_analysis_of_no_instrument_gets_no_estimate(sim_run: str) -> None:
    from ontology.refinement_impact import TierAsk, tier_impacts
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    with open_workspace_session(resolve_settings()) as session:
        assert tier_impacts(TierAsk(999, ("a", "b"), 0.1, 0.1, 0.1), session=session) is None


def test_accept_prints_the_tier_estimate(
    sim_run: str, cli: Callable[..., Result], tmp_path: Path
) -> None:
    import json

    dosed = _label_and_analyze(cli, sim_run, tmp_path / "dosed")
    out = tmp_path / "loop.json"
    res = cli(
        "ontology", "refine", "--run", sim_run, "--ontology-version", "original",
        "--labelers", f"{LABELER},sim:definitions;seed=2,sim:definitions;seed=3",
        "--rewriter", "sim/rewriter-operational", "--sample", "30", "--max-rounds", "3",
        "--review", "pause", "--json", str(out),
    )  # fmt: skip
    assert res.exit_code == 0, (res.output, res.exception)
    data = json.loads(out.read_text(encoding="utf-8"))
    [waiting] = [d for d in data["decisions"] if d["decision"] == "awaiting review"]
    assert waiting["gate"]["impact"]["share"] > 0
    accepted = cli("ontology", "accept", str(waiting["proposal"]))
    assert accepted.exit_code == 0, (accepted.output, accepted.exception)
    text = " ".join(accepted.output.split())
    assert f"analysis {dosed}: the drift tier order would not change in 0 of 20 draws" in text
