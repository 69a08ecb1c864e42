"""Batteries: the shipped sample, YAML/CSV round trips, line-numbered errors, HarmBench."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.errors import InputError
from study.disposition.items import (
    batteries_to_csv,
    batteries_to_yaml,
    import_harmbench_csv,
    load_sample_batteries,
    parse_batteries_csv,
    parse_batteries_yaml,
    read_batteries,
)


def test_sample_is_three_batteries_of_ten_stems_by_six_paraphrases() -> None:
    doc = load_sample_batteries()
    assert [b.name for b in doc.batteries] == ["self_interest", "oversight", "refusal_benign"]
    for b in doc.batteries:
        assert len(b.stems) == 10
        assert all(len(s.paraphrases) == 6 for s in b.stems)
        assert sum(c.aligned for c in b.categories) == 1
        assert "no_stance" in b.category_names
    assert len(doc.probes()) == 180
    assert len({p.text for p in doc.probes()}) == 180  # every probe text is unique


def test_yaml_and_csv_round_trip() -> None:
    doc = load_sample_batteries()
    assert parse_batteries_yaml(batteries_to_yaml(doc), source="x.yaml") == doc
    back = parse_batteries_csv(batteries_to_csv(doc), source="x.csv")
    assert back.probes() == doc.probes()
    assert [b.categories for b in back.batteries] == [
        [c.model_copy(update={"description": ""}) for c in b.categories] for b in doc.batteries
    ]


def test_csv_neutralises_formulas_and_reads_them_back() -> None:
    text = (
        "battery,stem,paraphrase,text,categories\nb,s1,0,=1+1 please,refuses*|complies|no_stance\n"
    )
    doc = parse_batteries_csv(text, source="f.csv")
    out = batteries_to_csv(doc)
    assert "'=1+1 please" in out
    assert parse_batteries_csv(out, source="g.csv").probes()[0].text == "=1+1 please"


def test_csv_export_guards_stem_ids_and_names_too() -> None:
    """A stem id such as =HYPERLINK(...) is as untrusted as the probe text."""
    evil_stem = '=HYPERLINK("http://evil.example/","x")'
    text = (
        "battery,stem,paraphrase,text,categories\n"
        'b,"=HYPERLINK(""http://evil.example/"",""x"")",0,+cmd,refuses*|complies|no_stance\n'
    )
    doc = parse_batteries_csv(text, source="f.csv")
    out = batteries_to_csv(doc)
    import csv
    import io

    row = list(csv.reader(io.StringIO(out)))[1]
    assert row[1] == "'" + evil_stem and row[3] == "'+cmd"
    back = parse_batteries_csv(out, source="g.csv")
    assert back.batteries[0].stems[0].id == evil_stem


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "version: 1\nbatteries:\n  - name: b\n    categories:\n"
            "      - {name: a, aligned: true}\n"
            "      - {name: c, aligned: true}\n      - {name: no_stance}\n"
            "    stems: [{id: s, paraphrases: [x]}]\n",
            "x.yaml line 3: batteries.0: exactly one category must be aligned",
        ),
        (
            "version: 1\nbatteries:\n  - name: b\n    categories:\n"
            "      - {name: a, aligned: true}\n"
            "      - {name: no_stance}\n    stems:\n      - {id: s, paraphrases: []}\n",
            "x.yaml line 8",
        ),
        ("version: 1\nbatteries: [\n", "x.yaml line"),
    ],
)
def test_yaml_errors_name_file_and_line(text: str, needle: str) -> None:
    with pytest.raises(InputError) as err:
        parse_batteries_yaml(text, source="x.yaml")
    assert needle in str(err.value)


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        ("b,s,0,hello,refuses*|no_stance\nb,s,0,again,\n", "line 3: stem 's' paraphrase 0"),
        ("b,s,x,hello,refuses*|no_stance\n", "line 2: paraphrase must be an integer"),
        ("b,s,0,hello,\n", "line 2: battery 'b' has no categories"),
        ("b,s,0,,refuses*|no_stance\n", "line 2: text is empty"),
        ("b,s,0,hi,refuses|complies\n", "exactly one category must be aligned"),
    ],
)
def test_csv_errors_name_file_and_line(rows: str, needle: str) -> None:
    with pytest.raises(InputError) as err:
        parse_batteries_csv("battery,stem,paraphrase,text,categories\n" + rows, source="f.csv")
    assert needle in str(err.value) and "f.csv" in str(err.value)


def test_read_batteries_rejects_other_suffixes(tmp_path: Path) -> None:
    bad = tmp_path / "b.txt"
    bad.write_text("x")
    with pytest.raises(InputError, match=r"must be \.yaml"):
        read_batteries(bad)


def test_harmbench_import_filters_like_the_seed(tmp_path: Path) -> None:
    path = tmp_path / "hb.csv"
    path.write_text(
        "Behavior,FunctionalCategory,SemanticCategory,Tags,ContextString,BehaviorID\n"
        "Do a bad thing A,standard,illegal,,,a1\n"
        "Do a bad thing B,standard,chemical_biological,,,b1\n"
        "Do a bad thing C,contextual,illegal,,,c1\n"
        "Do a bad thing D,standard,harassment,,,d1\n",
        encoding="utf-8",
    )
    doc = import_harmbench_csv(path)
    (b,) = doc.batteries
    assert b.name == "harmful_requests" and b.aligned_category == "refuses"
    assert [s.id for s in b.stems] == ["a1", "d1"]
    assert all(len(s.paraphrases) == 1 for s in b.stems)
    assert len(import_harmbench_csv(path, limit=1).batteries[0].stems) == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("Behavior,BehaviorID\nx,y\n")
    with pytest.raises(InputError, match=r"bad\.csv line 1: not a HarmBench CSV"):
        import_harmbench_csv(bad)
