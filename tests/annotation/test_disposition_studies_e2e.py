"""The disposition studies against a real Label Studio: classifier check, test awareness."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score
from sqlmodel import select
from statsmodels.stats.proportion import proportion_confint

from annotation.client import LabelStudioClient
from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.annotation.conftest import choices, make_users
from tests.annotation.seed import DISPOSITION_JUDGE, seed_disposition

pytestmark = pytest.mark.labelstudio


def _annotate(
    client: LabelStudioClient,
    users: list[tuple[int, str]],
    tasks: list[Any],
    question: str,
    labels: list[list[str]],
) -> None:
    for (user, _), values in zip(users, labels, strict=True):
        for task, value in zip(tasks, values, strict=True):
            client.create_annotation(
                task.id,
                result=choices({question: value}, "answer"),
                completed_by=user,
                lead_time=30.0,
            )


def test_disposition_classifier_check_and_test_awareness(
    run_cli: Any, ls_client: LabelStudioClient
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
        stored[(t.data["arm"], t.data["stem"], t.data["paraphrase"], t.data["sample"])]
        for t in tasks
    ]
    cats = [c["value"] for c in data["categories"]]
    other = {c: cats[(i + 1) % len(cats)] for i, c in enumerate(cats)}
    # annotator 1 agrees with the classifier except on task 1; annotator 2 also differs on
    # task 0 (no agreed label there) and gives annotator 1's label on task 1
    ann1 = [machine[0], other[machine[1]], *machine[2:]]
    ann2 = [other[machine[0]], other[machine[1]], *machine[2:]]
    users = make_users(ls_client, n=2)
    _annotate(ls_client, users, tasks, "category", [ann1, ann2])
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

    res = run_cli(
        "annotate", "push", "test_awareness", "--select", "disposition=dcheck", "--json"
    )  # fmt: skip
    assert res.code == 0, res.err
    pushed = res.json()
    assert pushed["imported"] == 15  # every answered probe; the exhausted one has no answer
    tasks = sorted(ls_client.list_tasks(pushed["project_id"]), key=lambda t: t.id)
    hostile = next(t for t in tasks if "<script>" in t.data["answer"])
    assert hostile.data["arm"] == "treated"  # stored verbatim; Label Studio shows it as text
    ann1 = ["aware" if t.data["arm"] == "treated" and i % 2 else "not_aware"
            for i, t in enumerate(tasks)]  # fmt: skip
    ann2 = list(ann1)
    ann2[0] = "aware" if ann1[0] == "not_aware" else "not_aware"
    _annotate(ls_client, users, tasks, "awareness", [ann1, ann2])
    res = run_cli("annotate", "apply", "test_awareness", "--json")
    assert res.code == 0, res.err
    out = res.json()
    rates = {r["arm"]: r for r in out["awareness"]}
    for arm in ("reference", "treated"):
        agreed = [a for i, (a, t) in enumerate(zip(ann1, tasks, strict=True))
                  if i > 0 and t.data["arm"] == arm]  # fmt: skip
        k = agreed.count("aware")
        low, high = proportion_confint(k, len(agreed), method="wilson")
        r = rates[arm]
        assert (r["items"], r["flagged"]) == (len(agreed), k)
        assert r["ci_low"] == pytest.approx(low) and r["ci_high"] == pytest.approx(high)
    assert rates["all"]["items"] == 14
    (pair,) = out["awareness_agreement"]
    assert pair["n"] == 15 and pair["exact"] == pytest.approx(14 / 15)
    res = run_cli("annotate", "apply", "test_awareness")
    assert res.code == 0 and "treated" in res.out
