"""Recovery of the source-reliance presets through the rendered prompts when question texts
repeat (issue 23 item 7): ``python bench/sources_repeated_texts.py``.

The recovery tests (``tests/sources/test_sim_recovery.py``) build the probe table straight
from the simulator; this check goes the way a run does: the items are rendered into probes
(:func:`study.sources.plan.run_sources`), the simulator reads each probe back
(:func:`study.sources.sim.wiring.probe_parser`) and answers it, and the table is analysed
as ``driftlens sources run`` does. 500 items, 170 of which repeat the question text of
another item with other options (an audit's data had such repeats: keyed by the text, every
item sharing it was answered as the last of them, and SDR+ read 0.55-0.61 for 0.87-0.90).

Printed per preset and source: the true PAR+ and SDR+, the estimates, their 95% intervals
and whether the truth lies inside.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from llm.specs import ModelSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from study.sources.analysis import analyze_sources_table
from study.sources.items import MCQItem
from study.sources.plan import SourcesConfig, run_sources
from study.sources.sim.probe import SOURCE_PRESETS
from study.sources.sim.wiring import backend_for

#: The presets with a behaviour to recover (src-null keeps every answer by construction).
PRESETS = ("src-rigid", "src-unreliable", "src-impressionable", "src-selective", "src-paper")


def repeated_items(n: int = 500, repeats: int = 170, n_choices: int = 4) -> list[MCQItem]:
    """``n`` items; the last ``repeats`` reuse an earlier item's question with new options."""
    distinct = n - repeats
    items = []
    for i in range(n):
        text = f"Synthetic question {i % distinct}?"
        choices = tuple(f"option {i}-{k}" for k in range(n_choices))
        answer = chr(65 + (i * 7) % n_choices)
        items.append(MCQItem(id=f"q{i:04d}", question=text, choices=choices, answer=answer))
    return items


def main() -> None:
    """Run every preset through the rendered prompts and print the recovery."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=170)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0, help="The run's seed (the simulator's draws).")
    args = ap.parse_args()
    items = repeated_items(args.items, args.repeats)
    texts = len({it.question for it in items})
    print(f"{len(items)} items, {texts} distinct question texts")
    out = {}
    for name in PRESETS:
        preset = SOURCE_PRESETS[name]
        cfg = SourcesConfig(seed=args.seed)
        run = run_sources(items, backend_for(ModelSpec.parse(f"sim/{name}"), items), config=cfg)
        assert run.n_unknown == 0 and run.n_errors == 0, (name, run.n_unknown, run.n_errors)
        cell = analyze_sources_table(run.table(), bootstrap=args.bootstrap, seed=5).to_dict()
        c = next(iter(cell["models"].values()))
        c = next(iter(c.values()))
        for source in ("user", "doc"):
            for key, truth in (
                ("par_plus", preset.par_plus.of(source)),
                ("sdr_plus", preset.sdr_plus.of(source)),
            ):
                lo, hi = c["rate_ci"][source][key]
                est = c[key][source]
                inside = lo <= truth <= hi
                out[f"{name}/{source}/{key}"] = [truth, est, lo, hi, inside]
                print(
                    f"{name:20s} {source:4s} {key:8s} truth {truth:.3f}  "
                    f"est {est:.3f} [{lo:.3f}, {hi:.3f}]  {'inside' if inside else 'OUTSIDE'}"
                )
    print(json.dumps({"outside": [k for k, v in out.items() if not v[-1]]}))


if __name__ == "__main__":
    main()
