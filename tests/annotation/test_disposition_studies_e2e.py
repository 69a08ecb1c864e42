"""The disposition studies against a real Label Studio: classifier check, test awareness."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from statistics import mean
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from sqlmodel import select
from statsmodels.stats.proportion import proportion_confint

from annotation.client import LabelStudioClient
from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.annotation.conftest import annotate_each, make_users
from tests.annotation.seed import DISPOSITION_JUDGE, seed_disposition

pytestmark = pytest.mark.labelstudio


def _calibration_from_the_study(
    run_cli: Any, tmp_path: Path, judge: list[str], human: list[str], levels: list[str]
) -> None:
    """The pulled study's judge-vs-majority table feeds ``judges calibration``: κ as sklearn."""
    table = tmp_path / "calibration.csv"
    res = run_cli("judges", "calibration-table", "disposition_check", "--out", str(table))
    assert res.code == 0, res.err
    said = " ".join(res.out.split())  # the console wraps long lines
    assert "5 items judged by" in said and "1 without a majority" in said
    got = pd.read_csv(table, dtype=str, keep_default_na=False)
    assert sorted(zip(got["judge"], got["human"], strict=True)) == sorted(
        zip(judge, human, strict=True)
    )
    assert f"--levels {','.join(levels)}" in said
    res = run_cli("judges", "calibration", str(table), "--levels", ",".join(levels))
    assert res.code == 0, res.err
    kappa = cohen_kappa_score(judge, human)
    assert f"Cohen's kappa {kappa:.3f}" in " ".join(res.out.split()), res.out
    # the disposition report's section: the same statistics for this study's items
    from study.disposition.analysis import analyze_study
    from study.disposition.report import write_disposition_report

    with open_workspace_session(resolve_settings()) as s:
        files = write_disposition_report(analyze_study("dcheck", session=s, n_boot=100), tmp_path)
    html = " ".join(files["report_html"].read_text("utf-8").split())
    assert "Judge–human calibration (classifier)" in html
    assert f"5 items; Cohen&#x27;s kappa {kappa:.3f}" in html and "triage: 1 disagreements" in html


def test_disposition_classifier_check_and_test_awareness(
    run_cli: Any, ls_client: LabelStudioClient, tmp_path: Path
) -> None:
    res = run_cli("annotate", "push", "disposition_check", "--json")
    assert res.code == 2 and "disposition=STUDY" in res.err
    with open_workspace_session(resolve_settings()) as s:
        seed_disposition(s)
        s.commit()
    res = run_cli(
        "annotate", "push", "disposition_check", "--select", "disposition=dcheck",
        "--select", "limit=6", "--json",
    )  # fmt: skip
    assert res.code == 0, res.err
    pushed = res.json()
    assert pushed["imported"] == 6
    tasks = sorted(ls_client.list_tasks(pushed["project_id"]), key=lambda t: t.id)
    # stem-stratified: 6 answers over 4 stems, no stem gives a third before all give two
    per_stem = Counter(t.data["stem"] for t in tasks)
    assert len(per_stem) == 4 and sorted(per_stem.values()) == [1, 1, 2, 2]
    data = tasks[0].data
    assert [c["value"] for c in data["categories"]][-1] == "no_stance"
    assert data["judge"] == DISPOSITION_JUDGE and "label" not in data  # blind to the classifier
    # the classifier's stored category of each task, read straight from the tables
    with open_workspace_session(resolve_settings()) as s:
        stmt = (
            select(DispositionArm.name, DispositionResponse, DispositionScore.label)
            .where(DispositionResponse.arm_id == DispositionArm.id)
            .where(DispositionScore.response_id == DispositionResponse.id)
        )
        stored = {(a, r.stem, r.paraphrase, r.sample): lab for a, r, lab in s.exec(stmt)}
    machine = [
        str(stored[(t.data["arm"], t.data["stem"], t.data["paraphrase"], t.data["sample"])])
        for t in tasks
    ]
    cats = [c["value"] for c in data["categories"]]
    other = {c: cats[(i + 1) % len(cats)] for i, c in enumerate(cats)}
    # annotator 1 agrees with the classifier except on task 1; annotator 2 also differs on
    # task 0 (no agreed label there) and gives annotator 1's label on task 1
    ann1 = [machine[0], other[machine[1]], *machine[2:]]
    ann2 = [other[machine[0]], other[machine[1]], *machine[2:]]
    users = make_users(ls_client, n=2)
    annotate_each(ls_client, users, tasks, "category", [ann1, ann2])
    res = run_cli("annotate", "apply", "disposition_check", "--json")
    assert res.code == 0, res.err
    rows = {
        (r["rater_a"], r["rater_b"], r["subset"]): r for r in res.json()["classifier_agreement"]
    }
    vs = rows[("classifier", "humans", "all")]
    assert vs["n"] == 5 and vs["exact"] == pytest.approx(4 / 5)
    assert vs["kappa"] == pytest.approx(cohen_kappa_score(machine[1:], ann1[1:]))
    assert vs["n_stems"] == len({t.data["stem"] for t in tasks[1:]})
    assert vs["kappa_low"] <= vs["kappa"] <= vs["kappa_high"]
    clear = rows[("classifier", "humans", "stance clear")]
    assert clear["n"] == sum(lab != "no_stance" for lab in ann1[1:])
    humans = rows[("annotator 1", "annotator 2", "all")]
    assert humans["n"] == 6 and humans["exact"] == pytest.approx(5 / 6)
    assert humans["kappa"] == pytest.approx(cohen_kappa_score(ann1, ann2))
    res = run_cli("annotate", "apply", "disposition_check")
    assert res.code == 0 and "humans" in res.out
    _calibration_from_the_study(run_cli, tmp_path, machine[1:], ann1[1:], cats)

    res = run_cli(
        "annotate", "push", "test_awareness", "--select", "disposition=dcheck", "--json"
    )  # fmt: skip
    assert res.code == 0, res.err
    pushed = res.json()
    assert pushed["imported"] == 15  # every answered probe; the exhausted one has no answer
    tasks = sorted(ls_client.list_tasks(pushed["project_id"]), key=lambda t: t.id)
    hostile = next(t for t in tasks if "<script>" in t.data["answer"])
    assert hostile.data["arm"] == "treated"  # stored verbatim; Label Studio shows it as text
    # reviewer 1 rates 1..7 in a fixed cycle; reviewer 2 is one step higher on every third
    # answer (capped at 7) and does not rate task 5, which the default of two ratings drops
    r1 = [1 + (3 * i) % 7 for i in range(len(tasks))]
    r2: list[int | None] = [min(7, v + (i % 3 == 0)) for i, v in enumerate(r1)]
    r2[5] = None
    annotate_each(
        ls_client, users, tasks, "awareness",
        [[str(v) for v in r1], [None if v is None else str(v) for v in r2]],
    )  # fmt: skip
    res = run_cli("annotate", "apply", "test_awareness", "--json")
    assert res.code == 0, res.err
    out = res.json()
    counted = [i for i in range(len(tasks)) if r2[i] is not None]
    item = {i: (r1[i] + (r2[i] or 0)) / 2 for i in counted}
    by_arm = {r["arm"]: r for r in out["awareness"]}
    assert set(by_arm) == {"reference", "treated", "all"}
    for arm in ("reference", "treated", "all"):
        mine = [i for i in counted if arm in ("all", tasks[i].data["arm"])]
        values = [item[i] for i in mine]
        high = sum(v >= 5 for v in values)
        low, upp = proportion_confint(high, len(values), method="wilson")
        r = by_arm[arm]
        assert (r["items"], r["high"]) == (len(values), high)
        assert r["stems"] == len({tasks[i].data["stem"] for i in mine})
        assert r["mean"] == pytest.approx(mean(values))
        assert r["high_share"] == pytest.approx(high / len(values))
        assert r["high_low"] == pytest.approx(low) and r["high_high"] == pytest.approx(upp)
        # a stem-resampled mean stays between the lowest and highest stem mean
        by_stem: dict[str, list[float]] = {}
        for i in mine:
            by_stem.setdefault(tasks[i].data["stem"], []).append(item[i])
        stem_means = [mean(v) for v in by_stem.values()]
        assert min(stem_means) <= r["mean_low"] <= r["mean"] <= r["mean_high"] <= max(stem_means)
    assert by_arm["all"]["items"] == 14
    (agreement,) = out["awareness_agreement"]
    alpha = krippendorff.alpha(
        reliability_data=np.array(
            [[float(r1[i]) for i in counted], [float(r2[i] or 0) for i in counted]]
        ),
        level_of_measurement="ordinal",
        value_domain=sorted({float(v) for v in [*r1, *(x for x in r2 if x is not None)]}),
    )
    assert agreement["alpha_ordinal"] == pytest.approx(alpha)
    assert out["alpha_by_question"]["awareness"] == pytest.approx(alpha)
    assert (agreement["items"], agreement["left_out"], agreement["reviewers"]) == (14, 1, 2)
    assert agreement["pairs"] == 14
    assert agreement["exact"] == pytest.approx(sum(r1[i] == r2[i] for i in counted) / 14)
    # one rating is enough: the skipped task counts with reviewer 1's rating alone
    res = run_cli(
        "annotate", "apply", "test_awareness", "--no-pull", "--min-ratings", "1", "--json"
    )
    assert res.code == 0, res.err
    out1 = res.json()
    assert {r["arm"]: r["items"] for r in out1["awareness"]}["all"] == 15
    assert out1["awareness_agreement"][0]["left_out"] == 0
    assert out1["awareness_agreement"][0]["alpha_ordinal"] == pytest.approx(alpha)
    # three ratings: nothing qualifies; every item is left out and counted
    res = run_cli(
        "annotate", "apply", "test_awareness", "--no-pull", "--min-ratings", "3", "--json"
    )
    assert res.code == 0, res.err
    out3 = res.json()
    assert out3["awareness"] == []
    assert out3["awareness_agreement"][0]["left_out"] == 15
    assert out3["awareness_agreement"][0]["alpha_ordinal"] is None
    res = run_cli("annotate", "apply", "test_awareness", "--no-pull")
    assert res.code == 0 and "treated" in res.out and "1 left out" in res.out

    # status counts what apply counts: tasks with at least N kept ratings
    res = run_cli("annotate", "status", "test_awareness", "--offline", "--json")
    assert res.code == 0, res.err
    st = res.json()
    assert (st["min_ratings"], st["items_with_min_ratings"]) == (2, 14)
    assert st["ratings_per_task"] == {"1": 1, "2": 14}
    res = run_cli("annotate", "status", "test_awareness", "--offline", "--min-ratings", "1")
    assert res.code == 0 and "tasks with >= 1 ratings" in res.out
    res = run_cli("annotate", "status", "disposition_check", "--offline", "--min-ratings", "2")
    assert res.code != 0 and "rating studies" in res.err and "Traceback" not in res.err

    # the LLM awareness judge on the same answers, against the reviewers' ratings
    res = run_cli("disposition", "awareness", "--study", "dcheck", "--judge", "sim/default")
    assert res.code == 0, res.err
    with open_workspace_session(resolve_settings()) as s:
        judged = {
            (r.stem, r.paraphrase, r.sample, a): sc.value
            for sc, r, a in s.exec(
                select(DispositionScore, DispositionResponse, DispositionArm.name)
                .where(DispositionScore.kind == "awareness")
                .where(DispositionScore.response_id == DispositionResponse.id)
                .where(DispositionResponse.arm_id == DispositionArm.id)
            )
        }
    assert len(judged) == 15  # every answered probe; a malformed reply is stored too
    both = [
        i for i in counted
        if judged[(tasks[i].data["stem"], tasks[i].data["paraphrase"], tasks[i].data["sample"],
                   tasks[i].data["arm"])] is not None
    ]  # fmt: skip
    said = " ".join(res.out.split())
    assert f"{len(both)} answers with at least 2 ratings (2 reviewers)" in said
    judge_scores = [
        float(judged[(tasks[i].data["stem"], tasks[i].data["paraphrase"],
                      tasks[i].data["sample"], tasks[i].data["arm"])] or 0)
        for i in both
    ]  # fmt: skip
    people = [[float(r1[i]) for i in both], [float(r2[i] or 0) for i in both]]
    rating_rows = [*people, judge_scores]
    oracle = krippendorff.alpha(
        reliability_data=np.array(rating_rows), level_of_measurement="ordinal",
        value_domain=sorted({v for row in rating_rows for v in row}),
    )  # fmt: skip
    assert f"{oracle:.3f} with the judge as one more reviewer" in said
