"""Two ontology versions on one run: changed labels, leaf flow, κ, flipped conclusions."""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlmodel import Session, col, select
from statsmodels.stats.inter_rater import cohens_kappa

from ontology.versions import document, edit_leaf, get_version
from storage.errors import InputError
from storage.models import GenerationRun, Response, StepLabel
from study.reasoning.trajectories import label_run
from study.reasoning.version_compare import compare_versions
from tests.analysis._sim_workspace import LABELER, RUN, build_sim_workspace


@pytest.fixture
def two_versions(session: Session) -> tuple[int, int]:
    build_sim_workspace(session, n_questions=12, seed=5)
    v1 = get_version(None, session=session)
    leaf = document(v1).leaf_names[1]
    # the new version's second leaf refuses every step that says "weigh" (all of them do)
    v2 = edit_leaf(v1, leaf, definition="Never a step that weighs.", triggers=[leaf.lower()],
                   exclusions=["weigh"], session=session)  # fmt: skip
    label_run(RUN, LABELER, session=session, ontology_version=v2.id)
    session.commit()
    assert v1.id is not None and v2.id is not None and v1.id != v2.id
    return v1.id, v2.id


def _leaves(session: Session, version: int) -> dict[tuple[int, int], str]:
    rows = session.exec(
        select(StepLabel.response_id, StepLabel.step_index, StepLabel.symbol)
        .join(Response, col(Response.id) == col(StepLabel.response_id))
        .where(StepLabel.ontology_version_id == version)
    )
    return {(r, i): s for r, i, s in rows}


def test_changed_labels_flow_kappa_and_flips(
    session: Session, two_versions: tuple[int, int]
) -> None:
    v1, v2 = two_versions
    vc = compare_versions(RUN, str(v1), str(v2), labeler=LABELER, session=session, n_boot=300)
    a, b = _leaves(session, v1), _leaves(session, v2)
    keys = sorted(set(a) & set(b))
    assert vc.shared_steps == len(keys) > 0
    assert vc.changed == sum(a[k] != b[k] for k in keys) > 0
    # the oracle for κ: statsmodels on the version × version table
    cats = sorted({*a.values(), *b.values()})
    table = np.zeros((len(cats), len(cats)))
    for k in keys:
        table[cats.index(a[k]), cats.index(b[k])] += 1
    assert vc.kappa == pytest.approx(cohens_kappa(table).kappa, abs=1e-9)
    flow = Counter((a[k], b[k]) for k in keys)
    for f in vc.flows:
        assert f.steps == sum(n for (x, _), n in flow.items() if x == f.leaf_a)
        assert f.kept == flow.get((f.leaf_a, f.leaf_a), 0)
    assert {r.statistic for r in vc.paired} == {"d_rel (dtw)", "d_rel (sri)"}
    sig = vc.significance
    flipped = sig[sig["significant_a"].astype(bool) != sig["significant_b"].astype(bool)]
    assert len(vc.flips) == len(flipped)


def test_a_version_without_labels_suggests_a_shell_quoted_label_command(
    session: Session, two_versions: tuple[int, int]
) -> None:
    """Issue #20 H: unquoted, ``--run a<b> c`` was a shell redirect from b into c."""
    v1, _v2 = two_versions
    base = get_version(v1, session=session)
    unlabelled = edit_leaf(base, document(base).leaf_names[0], definition="Never labelled.",
                           triggers=["x"], exclusions=[], session=session)  # fmt: skip
    run = session.exec(select(GenerationRun).where(GenerationRun.name == RUN)).one()
    run.name = "a<b> c"
    session.commit()
    with pytest.raises(InputError) as caught:
        compare_versions("a<b> c", str(v1), str(unlabelled.id), labeler=LABELER, session=session)
    words = shlex.split(str(caught.value).split("label it first: ", 1)[1])
    assert words == ["driftlens", "label", "--run", "a<b> c", "--labeler", LABELER,
                     "--ontology-version", f"driftlens@{unlabelled.version}"]  # fmt: skip


def test_cli_versions_json_and_same_version_refused(
    session: Session, two_versions: tuple[int, int], cli: Callable[..., Any], tmp_path: Path
) -> None:
    v1, v2 = two_versions
    out = tmp_path / "v.json"
    res = cli("ontology", "compare-run", RUN, str(v1), str(v2), "-l", LABELER, "-B", "200",
              "--json", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["changed"] > 0 and data["flows"]
    res = cli("ontology", "compare-run", RUN, str(v1), str(v1), "-l", LABELER)
    assert res.exit_code != 0 and "same ontology version" in str(res.exception)


def test_ontology_page_opens_the_version_comparison_on_a_run_from_its_link(
    session: Session, two_versions: tuple[int, int]
) -> None:
    from streamlit.testing.v1 import AppTest

    from ontology.versions import version_label
    from storage.models import OntologyVersion
    from tests.app.apptest_support import APP

    v1, v2 = (session.get(OntologyVersion, v) for v in two_versions)
    assert v1 is not None and v2 is not None
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/ontology_versions.py")
    params = {"vrun": RUN, "labeler": LABELER, "old": version_label(v1),
              "new": version_label(v2)}  # fmt: skip
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("SIMULATED" in str(e.value) for e in at.error)
    changed = next(m for m in at.metric if m.label == "Steps whose leaf changed")
    vc = compare_versions(RUN, str(v1.id), str(v2.id), labeler=LABELER, session=session,
                          n_boot=200)  # fmt: skip
    assert changed.value == f"{vc.changed} of {vc.shared_steps}"
    assert len(at.dataframe) >= 2
