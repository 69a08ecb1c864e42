"""``driftlens analyze``: drift table, statistics, report files, escaping and provenance."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import select

import driftlens_core
from storage.errors import InputError, NotFoundError
from storage.models import StepLabel
from storage.settings import Settings, default_db_url, resolve_settings
from storage.workspace import open_workspace_session
from study.reasoning.analysis import AnalysisResult, analyze_run
from study.reasoning.drift_files import condition_category, pair_frame, stats_frame
from study.reasoning.report import ReportData, build_tables
from study.reasoning.report.html import render_html
from study.reasoning.report.markdown import render_markdown
from study.reasoning.stored import get_analysis, latest_analysis
from study.report.html import esc
from study.report.markdown import md_escape
from tests.analysis._sim_workspace import IMG_PROBE, LABELER, RUN, SCRIPT_PROBE, build_sim_workspace
from tests.cli_invoke import invoke_cli

B = 2000
SEED = 11
ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"
ESCAPED_IMG = "&lt;img src=x onerror=alert(1)&gt;"


@dataclass(frozen=True)
class Analysed:
    settings: Settings
    result: AnalysisResult
    out: Path


def _settings(ws: Path) -> Settings:
    # Explicit URL: the module fixture must not follow a DRIFTLENS_DB_URL of the caller.
    return resolve_settings(workspace=ws, db_url=default_db_url(ws))


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Analysed:
    ws = tmp_path_factory.mktemp("analysis-ws")
    settings = _settings(ws)
    with open_workspace_session(settings) as session:
        build_sim_workspace(session)
    out = ws / "report"
    with open_workspace_session(settings) as session:
        result = analyze_run(RUN, LABELER, session=session, out_dir=out, bootstrap=B, seed=SEED)
    return Analysed(settings=settings, result=result, out=out)


# ------------------------------------------------------------------------ files


def test_report_folder_has_every_output(analysed: Analysed) -> None:
    out = analysed.out
    for name in (
        "report.html", "report.md", "drift.csv", "drift.parquet", "pairs.csv",
        "pairs.parquet", "stats.json", "provenance.json",
    ):  # fmt: skip
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    for fig in ("forest", "tiers", "agreement"):
        svg = (out / "figures" / f"{fig}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
        assert (out / "figures" / f"{fig}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for table in (
        "conditions",
        "tiers",
        "validity",
        "calibration",
        "letters",
        "agreement",
        "questions",
    ):
        csv = pd.read_csv(out / "tables" / f"{table}.csv")
        parquet = pd.read_parquet(out / "tables" / f"{table}.parquet")
        records = json.loads((out / "tables" / f"{table}.json").read_text())
        assert len(csv) == len(parquet) == len(records) > 0, table


def test_drift_csv_uses_categories_and_pairs_csv_keeps_the_stimulus(analysed: Analysed) -> None:
    drift = pd.read_csv(analysed.out / "drift.csv")
    pairs = pd.read_csv(analysed.out / "pairs.csv")
    assert len(drift) == len(pairs)
    assert set(drift["condition"]) == {
        "baseline", "noise/whitespace", "noise/filler", "attribute/age",
        "attribute/occupation", "life_event/bereavement", "life_event/job_loss",
    }  # fmt: skip
    assert "attribute/age/2" in set(pairs["condition"])
    # row for row the same pairs: the category of each stimulus and the same numbers
    assert (drift["condition"] == pairs["condition"].map(condition_category)).all()
    assert (drift["condition"] == pairs["category"]).all()
    assert drift[["question_id", "sample", "dtw", "sri"]].equals(
        pairs[["question_id", "sample", "dtw", "sri"]]
    )
    assert set(drift.loc[drift["condition"] == "baseline", "condition_class"]) == {"none"}
    # the stimulus key makes every row unique (driftlens stats refuses repeated rows)
    assert (drift["variant"] == pairs["condition"]).all()
    assert not drift.duplicated(["model", "question_id", "variant", "sample"]).any()


# ---------------------------------------------------------- same numbers as stats


def test_stats_json_equals_driftlens_stats_on_the_exported_drift_table(
    analysed: Analysed, tmp_path: Path
) -> None:
    target = tmp_path / "x.json"
    res = invoke_cli(
        ["stats", str(analysed.out / "drift.csv"), "--json", str(target),
         "--bootstrap", str(B), "--seed", str(SEED)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    from_cli = json.loads(target.read_text())
    stored = json.loads((analysed.out / "stats.json").read_text())
    assert from_cli == stored
    assert set(stored["models"]["sim/test"]["metrics"]) == {"dtw", "sri"}


def test_report_tables_are_the_stats_numbers(analysed: Analysed) -> None:
    stats = json.loads((analysed.out / "stats.json").read_text())
    conditions = pd.read_csv(analysed.out / "tables" / "conditions.csv")
    n = 0
    for rec in conditions.to_dict(orient="records"):
        c = stats["models"][rec["model"]]["metrics"][rec["metric"]]["conditions"][rec["condition"]]
        for key in ("mean", "d_rel", "ci_low", "ci_high", "p_adjusted", "mdd"):
            expected = c[key]
            if expected is None:
                assert pd.isna(rec[key])
            else:
                assert rec[key] == pytest.approx(expected, rel=1e-12, abs=1e-15), key
        assert (rec["letters"] if isinstance(rec["letters"], str) else "") == c["letters"]
        n += 1
    assert n == sum(
        len(m["conditions"]) for mm in stats["models"].values() for m in mm["metrics"].values()
    )
    # the HTML shows the same d_rel, rounded
    page = (analysed.out / "report.html").read_text()
    d = stats["models"]["sim/test"]["metrics"]["dtw"]["conditions"]["life_event/job_loss"]["d_rel"]
    assert f"<td>{d:.3f}</td>" in page


def test_same_seed_same_numbers(analysed: Analysed, tmp_path: Path) -> None:
    with open_workspace_session(analysed.settings) as session:
        again = analyze_run(
            RUN, LABELER, session=session, out_dir=tmp_path / "again", bootstrap=B, seed=SEED
        )
    assert again.stats == analysed.result.stats
    for name in ("drift.csv", "stats.json", "figures/forest.svg", "figures/forest.png",
                 "tables/conditions.csv"):  # fmt: skip
        assert (tmp_path / "again" / name).read_bytes() == (analysed.out / name).read_bytes()


# ------------------------------------------------------------------ the findings


def test_tiers_come_out_in_order_and_noise_is_not_significant(analysed: Analysed) -> None:
    tiers = analysed.result.tables.tiers
    for (_, metric), g in tiers.groupby(["model", "metric"]):
        level = dict(zip(g["class"], g["mean_drift"], strict=True))
        assert level["noise"] < level["attribute"] < level["life_event"], metric
        d = dict(zip(g["class"], g["mean_d_rel"], strict=True))
        assert d["noise"] < d["attribute"] < d["life_event"], metric
    conditions = analysed.result.tables.conditions
    noise = conditions[conditions["class"] == "noise"]
    assert len(noise) == 4 and (noise["p_adjusted"] > 0.05).all()
    assert not noise["significant"].any()
    life = conditions[conditions["class"] == "life_event"]
    assert life["significant"].all() and (life["ci_low"] > 0).all()
    spec = analysed.result.tables.validity.set_index(["metric", "check"])
    assert spec.loc[("dtw", "specificity"), "passed"]
    assert spec.loc[("sri", "specificity"), "passed"]


# --------------------------------------------------------------------- escaping


class _Tags(HTMLParser):
    """Collect the real tags and attributes (escaped text is data, not markup)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data


def test_html_is_self_contained_and_untrusted_text_is_inert(analysed: Analysed) -> None:
    page = (analysed.out / "report.html").read_text()
    assert "<script" not in page.lower()
    assert SCRIPT_PROBE not in page and IMG_PROBE not in page
    assert "<img src=x" not in page
    assert ESCAPED_SCRIPT in page and ESCAPED_IMG in page
    # no external resource: every src/href is an embedded data: URI; no handlers
    parsed = _Tags()
    parsed.feed(page)
    names = {tag for tag, _ in parsed.tags}
    assert not names & {"script", "link", "iframe", "object", "embed", "base", "frame"}
    urls = [v for _, a in parsed.tags for k, v in a.items() if k in ("src", "href", "srcset")]
    assert len(urls) == 3 and all(u.startswith("data:image/") for u in urls), urls
    assert not [k for _, a in parsed.tags for k in a if k.startswith("on")]
    assert "url(" not in parsed.style and "@import" not in parsed.style
    assert re.search(r"\b(?:https?:)?//[a-z0-9]", page.replace("http-equiv", "")) is None
    csp = [a["content"] for t, a in parsed.tags if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0] and "script" not in csp[0]
    # SIMULATED banner and provenance
    assert "SIMULATED DATA" in page
    for needle in ("driftlens@1", "keywords", "sim/test", "temperature", "numpy",
                   driftlens_core.implementation(), f"seed {SEED}"):  # fmt: skip
        assert needle in page, needle


def test_step_labels_are_coloured_by_root(analysed: Analysed) -> None:
    page = (analysed.out / "report.html").read_text()
    chips = re.findall(
        r'<span class="chip" style="background:(#[0-9A-Fa-f]{6})"[^>]*>([^<]*)', page
    )
    by_root: dict[str, set[str]] = {}
    for colour, label in chips:
        by_root.setdefault(label.split(" · ")[0], set()).add(colour)
    assert {"Social", "Practical", "Protective", "Personal"} <= set(by_root)
    assert all(len(c) == 1 for c in by_root.values())  # one colour per root
    assert len({next(iter(c)) for c in by_root.values()}) == len(by_root)  # distinct


def test_markdown_escapes_untrusted_text(analysed: Analysed) -> None:
    md = (analysed.out / "report.md").read_text()
    assert SCRIPT_PROBE not in md and IMG_PROBE not in md and "<img" not in md
    assert "&lt;script&gt;" in md and "&lt;img src=x onerror=alert\\(1\\)&gt;" in md
    assert "SIMULATED DATA" in md
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert (analysed.out / link).is_file(), link


def test_escape_helpers_neutralise_probes() -> None:
    assert esc(SCRIPT_PROBE) == ESCAPED_SCRIPT
    assert esc('" onmouseover="x') == "&quot; onmouseover=&quot;x"
    md = md_escape("[click](javascript:alert(1)) ![x](y) <b>|</b>\n# heading")
    assert "<" not in md and "](" not in md and "\n" not in md and "\\|" in md


def test_real_run_has_no_simulated_banner(analysed: Analysed) -> None:
    stats = analysed.result.stats
    prov = analysed.result.provenance.model_copy(update={"simulated": False})
    data = ReportData(title="t", stats=stats, tables=build_tables(stats), provenance=prov)
    assert "SIMULATED" not in render_html(data, {})


# ------------------------------------------------------------------- storage, CLI


def test_analysis_row_records_config_result_and_implementation(analysed: Analysed) -> None:
    with open_workspace_session(analysed.settings) as session:
        stored = latest_analysis(RUN, session=session, labeler_spec=LABELER)
    assert stored is not None
    assert stored.config.bootstrap == B and stored.config.seed == SEED
    assert stored.config.ontology_version == "driftlens@1"
    assert stored.implementation == driftlens_core.implementation()
    assert stored.provenance.simulated and stored.provenance.run == RUN
    assert stored.files["report_html"].name == "report.html"
    assert stored.tables.tiers.equals(build_tables(stored.stats).tiers)
    with open_workspace_session(analysed.settings) as session:
        again = get_analysis(analysed.result.analysis_id, session=session)
        with pytest.raises(NotFoundError):
            get_analysis(10_000, session=session)
    assert again.id == analysed.result.analysis_id and again.stats == analysed.result.stats


def test_analyze_cli_prints_summary_and_path(workspace: Path, tmp_path: Path) -> None:
    with open_workspace_session(_settings(workspace)) as session:
        build_sim_workspace(session, n_questions=6)
    out = tmp_path / "cli-report"
    res = invoke_cli(
        ["analyze", "--run", RUN, "--labeler", LABELER, "--out", str(out),
         "--bootstrap", "200", "--seed", "3"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "SIMULATED DATA" in res.output and "life_event" in res.output
    assert "report.html" in res.output.replace("\n", "")
    assert (out / "report.html").is_file()


def test_unlabeled_run_is_a_clear_error(workspace: Path, tmp_path: Path) -> None:
    settings = _settings(workspace)
    with open_workspace_session(settings) as session:
        build_sim_workspace(session, n_questions=3)
    with open_workspace_session(settings) as session:
        for label in session.exec(select(StepLabel)).all():
            session.delete(label)
    with open_workspace_session(settings) as session, pytest.raises(InputError) as err:
        analyze_run(RUN, LABELER, session=session, out_dir=tmp_path / "r", bootstrap=200)
    assert "driftlens label" in str(err.value) and "not_labeled" in str(err.value)


def test_condition_category_and_stats_frame() -> None:
    assert condition_category("attribute/age/3") == "attribute/age"
    assert condition_category("baseline") == "baseline"
    assert condition_category("custom") == "custom"
    pairs = pd.DataFrame(
        {
            "model": ["m", "m"], "question_id": ["q2", "q1"],
            "condition": ["life_event/divorce/2", "baseline"],
            "condition_class": ["life_event", "none"], "sample": [0, 1],
            "n_base": [3, 3], "n_other": [4, 3], "dtw": [0.5, 0.1], "sri": [0.4, 0.2],
            "levenshtein": [0.5, 0.1], "jsd": [0.3, 0.3],
        }
    )  # fmt: skip
    df = stats_frame(pairs)
    assert list(df["condition"]) == ["baseline", "life_event/divorce"]
    assert list(df["question_id"]) == ["q1", "q2"]
    assert list(pair_frame(pairs)["condition"]) == ["baseline", "life_event/divorce/2"]
    assert "levenshtein" not in df.columns and {"dtw", "sri"} <= set(df.columns)
    # every non-bookkeeping column but the keys is a numeric metric: `driftlens stats` reads it
    assert list(df["variant"]) == ["baseline", "life_event/divorce/2"]
    assert set(df.columns) - {
        "model",
        "question_id",
        "condition",
        "variant",
        "condition_class",
        "sample",
        "n_base",
        "n_other",
    } == {"dtw", "sri"}


def test_several_runs_are_models_side_by_side(workspace: Path, tmp_path: Path) -> None:
    settings = _settings(workspace)
    with open_workspace_session(settings) as session:
        build_sim_workspace(session, n_questions=8, run_name="run-a", model="sim/a")
        build_sim_workspace(
            session, n_questions=8, run_name="run-b", model="sim/b", dose_scale=0.5, seed=8
        )
    out = tmp_path / "two"
    with open_workspace_session(settings) as session:
        result = analyze_run(
            ["run-a", "run-b"], LABELER, session=session, out_dir=out, bootstrap=300, seed=2
        )
    assert set(result.stats["models"]) == {"sim/a", "sim/b"}
    assert set(pd.read_csv(out / "drift.csv")["model"]) == {"sim/a", "sim/b"}
    tiers = result.tables.tiers.set_index(["model", "metric", "class"])["mean_drift"]
    # run-b got half the memory dose: its life-event tier sits below run-a's
    assert tiers[("sim/b", "dtw", "life_event")] < tiers[("sim/a", "dtw", "life_event")]
    page = (out / "report.html").read_text()
    assert "run-a, run-b" in page and "Every analysed run" in page
    with open_workspace_session(settings) as session:
        for run in ("run-a", "run-b"):
            stored = latest_analysis(run, session=session)
            assert stored is not None and stored.config.runs == ("run-a", "run-b")
    res = invoke_cli(
        ["stats", str(out / "drift.csv"), "--json", str(tmp_path / "x.json"),
         "--bootstrap", "300", "--seed", "2"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "x.json").read_text()) == result.stats
    # the CLI takes --run more than once
    res = invoke_cli(
        ["analyze", "--run", "run-a", "--run", "run-b", "--labeler", LABELER,
         "--out", str(tmp_path / "cli"), "--bootstrap", "200"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "sim/a" in res.output and "sim/b" in res.output


def test_stored_configuration_with_markup_stays_text(analysed: Analysed) -> None:
    stats = analysed.result.stats
    prov = analysed.result.provenance.model_copy(
        update={
            "run_config": {"note": SCRIPT_PROBE, "fence": "````"},
            "sampling": {"stop": [IMG_PROBE]},
        }
    )
    data = ReportData(title=SCRIPT_PROBE, stats=stats, tables=build_tables(stats), provenance=prov)
    md = render_markdown(data)
    page = render_html(data, {})
    for text in (md, page):
        assert SCRIPT_PROBE not in text and IMG_PROBE not in text and "<img" not in text
    assert "<script" not in page.lower()
    assert "\\u003cscript\\u003e" in md  # the JSON value is intact, only \u-escaped
