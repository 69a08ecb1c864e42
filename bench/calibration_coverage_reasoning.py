"""Coverage of model-only and calibrated reasoning drift under a confusing LLM labeler.

Known-dose evidence for :mod:`study.reasoning.calibrated` (drift net of labeler error). Each
simulated study is drawn in memory with the drift simulator's own functions:

1. ``--questions`` questions (fresh texts per study, so questions are a sample of the
   simulator's population); per question the responses of the reasoning drift design:
   baseline samples 0 and 1 (the ``none`` pair), two noise memories, an attribute and a
   life event (:func:`study.reasoning.sim.generator.simulate`, preset ``--preset``), each
   with its **true** leaves (the simulator's ground truth);
2. the **LLM labeler** labels every step with the truth except that, for each confused
   leaf pair (A, B) of ``--confuse`` (as ``sim:confuse=A~B@R`` does), a step whose true
   leaf is A is labelled B (and B labelled A) with rate R, drawn per step;
3. **people** label every step of a simple random slice of ``--human-share`` of the
   questions (inclusion probability ``k / Q``): the true leaf, replaced by a random other
   leaf with probability ``--human-flip`` (0: annotators who agree with the truth);
4. the drift table from the LLM labels (every pair) and from the human labels (the slice's
   pairs) go through :func:`study.reasoning.calibrated.calibrate_drift`, the statistic of
   reports and ``stats.json``.

The truth is what the people's labels give on average over the question population: the
mean DTW (SRI) per condition, and each condition minus the noise floor, of
``--population`` fresh questions labelled by the same human process (computed once per
run, its Monte Carlo SE printed). Reported per condition: the share of studies whose
interval covers it (model-only, calibrated, human-only of the same slice), mean widths,
λ and bias, with the Monte Carlo SE of a coverage.

Usage::

    python bench/calibration_coverage_reasoning.py --studies 400 --human-share 0.1 \\
        --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from driftlens_core import pair_drift
from llm.seeds import stable_int
from storage.models import BASELINE_CONDITION
from study.reasoning.calibrated import calibrate_drift
from study.reasoning.sim.bank import LEAF_NAMES
from study.reasoning.sim.generator import simulate

#: (condition, class, memory line) of one simulated question; the memory lines are the
#: simulator's own classes (study/reasoning/sim/classify.py).
CONDITIONS: tuple[tuple[str, str, str], ...] = (
    ("noise_filler", "noise", "Hmm okay."),
    ("noise_um", "noise", "Um, okay so."),
    ("attribute_age", "attribute", "I am 70 years old."),
    ("life_flood", "life_event", "A flood destroyed our town. We lost everything."),
)
REPORTED = ("none", "attribute_age", "life_flood")


def _confusions(spec: str) -> dict[str, list[tuple[str, float]]]:
    """``A~B@R+C~D@R`` (leaf symbols 1..11) → leaf → [(other leaf, rate)]."""
    out: dict[str, list[tuple[str, float]]] = {}
    for item in spec.split("+"):
        pair, _, rate = item.partition("@")
        a, _, b = pair.partition("~")
        la, lb = LEAF_NAMES[int(a) - 1], LEAF_NAMES[int(b) - 1]
        out.setdefault(la, []).append((lb, float(rate)))
        out.setdefault(lb, []).append((la, float(rate)))
    return out


def _llm(leaves: tuple[str, ...], conf: dict[str, list[tuple[str, float]]], rng: random.Random):
    out = []
    for leaf in leaves:
        got = leaf
        for other, rate in conf.get(leaf, ()):
            if rng.random() < rate:
                got = other
                break
        out.append(got)
    return out


def _human(leaves: tuple[str, ...], flip: float, rng: random.Random) -> list[str]:
    if flip <= 0:
        return list(leaves)
    return [
        rng.choice([x for x in LEAF_NAMES if x != leaf]) if rng.random() < flip else leaf
        for leaf in leaves
    ]


def _questions(tag: str, n: int, preset: str) -> list[dict[tuple[str, int], tuple[str, ...]]]:
    """The true leaves of every response of ``n`` fresh questions."""
    out = []
    for i in range(n):
        q = f"What should one do here? ({tag}-{i})"
        resp: dict[tuple[str, int], tuple[str, ...]] = {}
        for s in (0, 1):
            resp[(BASELINE_CONDITION, s)] = simulate(q, "", preset=preset, sample_index=s).leaves
        for cond, _, line in CONDITIONS:
            resp[(cond, 0)] = simulate(q, line, preset=preset, sample_index=0).leaves
        out.append(resp)
    return out


_SYMBOL = {leaf: i + 1 for i, leaf in enumerate(LEAF_NAMES)}
_CLASS = {c: k for c, k, _ in CONDITIONS}


def _drift(labelled: list[dict[tuple[str, int], list[str]]], qids: list[str]) -> pd.DataFrame:
    """The drift table of labelled questions (every pair against baseline sample 0)."""
    keys, base, other = [], [], []
    for qid, resp in zip(qids, labelled, strict=True):
        b = [_SYMBOL[x] for x in resp[(BASELINE_CONDITION, 0)]]
        for (cond, s), leaves in resp.items():
            if cond == BASELINE_CONDITION and s == 0:
                continue
            keys.append((qid, "none" if cond == BASELINE_CONDITION else cond, cond, s))
            base.append(b)
            other.append([_SYMBOL[x] for x in leaves])
    d = pair_drift(base, other)
    return pd.DataFrame(
        {
            "model": "sim/default",
            "question_id": [k[0] for k in keys],
            "condition": [k[2] for k in keys],
            "condition_class": [
                "none" if k[2] == BASELINE_CONDITION else _CLASS[k[2]] for k in keys
            ],
            "sample": [k[3] for k in keys],
            "n_base": [len(x) for x in base],
            "n_other": [len(x) for x in other],
            "dtw": np.asarray(d.dtw, dtype=float),
            "sri": np.asarray(d.sri, dtype=float),
        }
    )


def _label(questions, fn) -> list[dict[tuple[str, int], list[str]]]:
    return [{k: fn(v) for k, v in resp.items()} for resp in questions]


def _targets(df: pd.DataFrame, metric: str) -> dict[str, float]:
    """Mean per condition (``none`` for the baseline pair) and minus the noise floor."""
    means = df.groupby("condition")[metric].mean()
    floor = float(df.loc[df["condition_class"] == "noise", metric].mean())
    out = {}
    for cond in REPORTED:
        key = BASELINE_CONDITION if cond == "none" else cond
        out[f"mean:{cond}"] = float(means[key])
        out[f"vs_noise:{cond}"] = float(means[key]) - floor
    return out


def add_study_options(ap: argparse.ArgumentParser, *, studies: int) -> None:
    """The options that draw this bench's studies (also read by
    ``calibration_interval_variants.py reasoning``, which draws the same studies)."""
    ap.add_argument("--studies", type=int, default=studies)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--human-share", type=float, default=0.1)
    ap.add_argument("--human-flip", type=float, default=0.0)
    ap.add_argument("--confuse", default="1~2@0.4+3~4@0.4+5~6@0.4+7~8@0.4")
    ap.add_argument("--preset", default="default")
    ap.add_argument("--population", type=int, default=20000)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_options(ap, studies=400)
    ap.add_argument("--metric", default="dtw", choices=["dtw", "sri"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    conf = _confusions(args.confuse)
    # the truth: the human process on a large fresh population of questions
    pop = _questions(f"pop{args.seed}", args.population, args.preset)
    hrng = random.Random(stable_int("population-humans", args.seed))
    pop_h = _drift(
        _label(pop, lambda v: _human(v, args.human_flip, hrng)),
        [str(i) for i in range(len(pop))],
    )
    truth = _targets(pop_h, args.metric)
    sd = pop_h.groupby("condition")[args.metric].std()
    truth_se = float(sd.max() / math.sqrt(args.population))
    k = max(2, round(args.human_share * args.questions))
    cells: dict[str, dict[str, list[float]]] = {}
    for s in range(args.studies):
        qs = _questions(f"s{args.seed}-{s}", args.questions, args.preset)
        qids = [f"q{i}" for i in range(len(qs))]
        lrng = random.Random(stable_int("llm", args.seed, s))
        model = _drift(_label(qs, lambda v, r=lrng: _llm(v, conf, r)), qids)
        srng = random.Random(stable_int("slice", args.seed, s))
        chosen = sorted(srng.sample(range(len(qs)), k))
        hr = random.Random(stable_int("humans", args.seed, s))
        human = _drift(
            _label([qs[i] for i in chosen], lambda v, r=hr: _human(v, args.human_flip, r)),
            [qids[i] for i in chosen],
        )
        human["inclusion_probability"] = k / len(qs)
        out = calibrate_drift(model, human, metrics=(args.metric,))
        for r in out.rows:
            cond = "none" if r.condition == BASELINE_CONDITION else r.condition
            name = f"{r.what}:{cond}"
            if name not in truth or r.calibrated_ci is None or r.human_only_ci is None:
                continue
            t = truth[name]
            c = cells.setdefault(name, {})
            for label, ci, point in (
                ("model_only", r.model_only_ci, r.model_only),
                ("calibrated", r.calibrated_ci, r.calibrated),
                ("human_only", r.human_only_ci, r.human_only),
            ):
                assert point is not None
                c.setdefault(f"{label}_covers", []).append(float(ci[0] <= t <= ci[1]))
                c.setdefault(f"{label}_width", []).append(ci[1] - ci[0])
                c.setdefault(f"{label}_error", []).append(point - t)
            c.setdefault("lam", []).append(float(r.lam or 0.0))
            c.setdefault("calibrated_headline", []).append(float(r.headline == "calibrated"))
    rows = {}
    for name, c in sorted(cells.items()):
        n = len(c["lam"])
        rows[name] = {
            "truth": truth[name],
            "studies": n,
            **{key: float(np.mean(v)) for key, v in c.items()},
        }
    result = {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "human_questions": k,
        "truth_mc_se": truth_se,
        "coverage_mc_se": math.sqrt(0.95 * 0.05 / max(1, args.studies)),
        "rows": rows,
        "seconds": time.perf_counter() - t0,
    }
    head = (
        f"{'target':<26}{'truth':>8}{'model':>8}{'calib':>8}{'human':>8}"
        f"{'w_model':>9}{'w_calib':>9}{'w_human':>9}{'bias_m':>8}{'bias_c':>8}{'lam':>6}"
    )
    print(
        f"{args.studies} studies, {args.questions} questions, {k} with human labels "
        f"(share {args.human_share}), confuse {args.confuse}, human flip {args.human_flip}, "
        f"metric {args.metric}; truth MC SE {truth_se:.4f}"
    )
    print(head)
    for name, row in rows.items():
        print(
            f"{name:<26}{row['truth']:>8.4f}{row['model_only_covers']:>8.1%}"
            f"{row['calibrated_covers']:>8.1%}{row['human_only_covers']:>8.1%}"
            f"{row['model_only_width']:>9.4f}{row['calibrated_width']:>9.4f}"
            f"{row['human_only_width']:>9.4f}{row['model_only_error']:>+8.4f}"
            f"{row['calibrated_error']:>+8.4f}{row['lam']:>6.2f}"
        )
    print(f"{result['seconds']:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
