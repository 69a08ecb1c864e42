"""Report, SFT export, tier-2 claims, the demo and run commands, and the app page."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from llm.specs import ModelSpec
from storage.errors import InputError
from study.sources.analysis import analyze_sources_table
from study.sources.items import shipped_items
from study.sources.plan import SourcesConfig, run_sources
from study.sources.report import write_sources_report
from study.sources.sft import MIXED_SHARES, sft_examples, variant_counts
from study.sources.sim.wiring import backend_for
from study.sources.tier2 import claims_to_jsonl, generate_claims, read_claims
from tests.cli_invoke import invoke_cli

EVIL = "<script>alert(1)</script>"


def _cli(*args: str) -> tuple[int, str]:
    res = invoke_cli(["sources", *args])
    return res.exit_code, res.output


def test_report_escapes_names_and_is_self_contained(tmp_path: Path) -> None:
    items = shipped_items()[::10]
    run = run_sources(items, backend_for(ModelSpec.parse("sim/src-paper"), items))
    table = run.table().assign(model=EVIL)
    result = analyze_sources_table(table, bootstrap=100, seed=1).to_dict()
    files = write_sources_report(result, table, tmp_path, simulated=True)
    html = files.html.read_text()
    assert EVIL not in html and "&lt;script&gt;" in html
    assert "Content-Security-Policy" in html and "<script" not in html.replace("&lt;script", "")
    assert "data:image/png;base64," in html and "SIMULATED DATA" in html
    md = files.markdown.read_text()
    assert EVIL not in md and "The 13 probe variants" in md
    assert set(files.figures) == {"quadrant", "kl_vs_dnll"}


def test_sft_mixture_shares_and_reproducibility() -> None:
    items = shipped_items()
    rows = sft_examples(items, n=1000, seed=3)
    got = Counter(r["variant"] for r in rows)
    assert got == {v: round(1000 * s) for v, s in MIXED_SHARES.items()}
    assert sum(MIXED_SHARES.values()) == pytest.approx(1.0)
    assert rows == sft_examples(items, n=1000, seed=3)
    assert rows != sft_examples(items, n=1000, seed=4)
    by_id = {it.id: it for it in items}
    for r in rows[:50]:
        msgs = r["messages"]
        assert isinstance(msgs, list)
        assert msgs[-1] == {"role": "assistant", "content": by_id[str(r["item_id"])].answer}
    assert sum(variant_counts(7, MIXED_SHARES).values()) == 7
    standard = sft_examples(items, n=10, strategy="standard", seed=0)
    assert {r["variant"] for r in standard} == {"bare"}


def test_tier2_claims_written_reviewed_and_used(tmp_path: Path) -> None:
    items = shipped_items()[:4]
    res = generate_claims(items, ModelSpec.parse("sim/default"))
    assert set(res.claims) == {it.id for it in items} and not res.failed
    path = tmp_path / "claims.jsonl"
    path.write_text(claims_to_jsonl(res))
    claims = read_claims(path, items)
    run = run_sources(
        items,
        backend_for(ModelSpec.parse("sim/src-paper"), items),
        config=SourcesConfig(tiers=(1, 2)),
        claims=claims,
    )
    assert len(run.records) == 4 + 4 * 12 * 2 and run.n_unknown == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"id": items[0].id, "claim": f"it is {items[0].choices[1]} or [answer]"}) + "\n"
    )
    with pytest.raises(InputError, match="line 1: the claim names the option"):
        read_claims(bad, items)
    with pytest.raises(InputError, match="needs a contextual claim"):
        run_sources(
            items,
            backend_for(ModelSpec.parse("sim/src-paper"), items),
            config=SourcesConfig(tiers=(2,)),
        )


def test_demo_command_writes_everything(tmp_path: Path) -> None:
    code, out = _cli("demo", "--out", str(tmp_path), "--bootstrap", "200")
    assert code == 0, out
    for name in (
        "report.html",
        "report.md",
        "probes.csv",
        "probes.jsonl",
        "stats.json",
        "sft_mixed.jsonl",
        "quadrant.svg",
    ):
        assert (tmp_path / name).exists(), name
    assert "SIMULATED DATA" in out and "Next:" in out
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert set(stats["models"]) == {"sim/src-paper", "sim/src-selective"}
    code, out = _cli("stats", str(tmp_path / "probes.csv"), "--bootstrap", "200")
    assert code == 0, out


def test_run_and_items_commands(tmp_path: Path) -> None:
    code, out = _cli(
        "run",
        "--model",
        "sim/src-rigid",
        "--limit",
        "12",
        "--out",
        str(tmp_path / "r"),
        "--bootstrap",
        "200",
    )
    assert code == 0, out
    assert (tmp_path / "r" / "probes.csv").exists() and "156 probes" in out
    bad = tmp_path / "items.jsonl"
    bad.write_text('{"id": "a", "question": "q", "choices": ["x"], "answer": "A"}\n')
    code, out = _cli("items", str(bad))
    assert code == 2 and "line 1" in out and "Traceback" not in out
    code, out = _cli("export-sft", "--out", str(tmp_path / "sft.jsonl"), "--n", "40")
    assert code == 0 and len((tmp_path / "sft.jsonl").read_text().splitlines()) == 40


def test_page_renders_results_escaped(workspace: Path) -> None:
    from tests.app.apptest_support import open_page

    items = shipped_items()[:10]
    run = run_sources(items, backend_for(ModelSpec.parse("sim/src-paper"), items))
    folder = workspace / "reports" / "sources" / "x"
    folder.mkdir(parents=True)
    table = run.table().assign(model=EVIL)
    table.to_csv(folder / "probes.csv", index=False)
    result = analyze_sources_table(table, bootstrap=50, seed=0).to_dict()
    (folder / "stats.json").write_text(json.dumps(result))
    at = open_page("sources.py")
    shown = " ".join(m.value for m in at.markdown) + " ".join(s.value for s in at.subheader)
    assert EVIL not in shown
    assert len(at.dataframe) >= 3


def test_instruction_effect_in_run_and_report(tmp_path: Path) -> None:
    code, out = _cli(
        "run",
        "--model",
        "sim/src-paper",
        "--limit",
        "60",
        "--instruction",
        "n",
        "--instruction",
        "s",
        "--out",
        str(tmp_path),
        "--bootstrap",
        "200",
    )
    assert code == 0, out
    stats = json.loads((tmp_path / "stats.json").read_text())
    cell = stats["models"]["sim/src-paper"]["commonsense"]
    assert cell["instruction"] == "n"
    effect = cell["instruction_effect"]
    assert set(effect) == {"n", "s"}
    # self-only moves the simulated model toward keeping its own answer
    for s in ("user", "doc"):
        assert effect["s"]["par_plus"][s] > effect["n"]["par_plus"][s]
    assert effect["s"]["self_pct"] > effect["n"]["self_pct"]
    assert "System instructions" in (tmp_path / "report.md").read_text()
