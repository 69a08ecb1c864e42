"""Perturbation catalog: contents, stable keys, versioning, import/export round trips."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from storage.errors import InputError
from study.catalog import (
    catalog_to_csv,
    catalog_to_yaml,
    import_catalog,
    load_default_catalog,
    read_catalog_file,
    resolve_catalog,
)
from study.catalog.document import CatalogDocument, parse_catalog_csv, parse_catalog_yaml

ATTRIBUTE_CATEGORIES = {
    "gender",
    "gender_identity",
    "sexual_orientation",
    "age",
    "occupation",
    "appearance",
    "disability_health",
    "education_income",
    "physical_traits",
    "socioeconomic",
}
LIFE_EVENT_CATEGORIES = {
    "childhood_adversity",
    "illness_diagnosis",
    "accident",
    "bereavement",
    "new_parenthood",
    "divorce",
    "job_loss",
    "forced_migration",
    "natural_disaster",
    "pandemic",
}


def test_default_catalog_contents() -> None:
    doc = load_default_catalog()
    entries = doc.entries()
    by_cat = Counter((e.condition_class, e.category) for e in entries)
    noise = {e.text for e in entries if e.condition_class == "noise"}
    assert noise == {" ", "\n", "\t", ". ", "... ", "Hi. ", "Uh, ", "Okay. "}
    assert {c for cls, c in by_cat if cls == "attribute"} == ATTRIBUTE_CATEGORIES
    assert {c for cls, c in by_cat if cls == "life_event"} == LIFE_EVENT_CATEGORIES
    for (cls, _cat), n in by_cat.items():
        if cls == "attribute":
            assert n >= 5
        if cls == "life_event":
            assert n == 3
    for e in entries:
        if e.condition_class == "attribute":
            assert re.search(r"\b(I|I'm|my)\b", e.text)  # first person
        if e.condition_class == "life_event":
            assert e.text.startswith("The user")  # third person
            assert e.text.count(". ") >= 1  # several sentences
            assert "\n\n" not in e.text  # one line before the question
    assert len({e.key for e in entries}) == len(entries)


def test_keys_are_stable_and_positional() -> None:
    keys = [e.key for e in load_default_catalog().entries()]
    assert keys[0] == "noise/whitespace/1"
    assert "attribute/age/1" in keys
    assert "life_event/pandemic/3" in keys
    assert "life_event/pandemic/4" not in keys


def test_yaml_and_csv_round_trip() -> None:
    doc = load_default_catalog()
    again = parse_catalog_yaml(catalog_to_yaml(doc), source="mem")
    assert again == doc
    from_csv = parse_catalog_csv(catalog_to_csv(doc), source="mem", name=doc.name)
    assert from_csv.entries() == doc.entries()
    assert from_csv.content_hash() == doc.content_hash()


def test_explicit_numbers_survive_round_trip() -> None:
    doc = CatalogDocument.model_validate(
        {
            "name": "t",
            "categories": [
                {
                    "condition_class": "attribute",
                    "category": "age",
                    "stimuli": ["I am 30.", {"n": 7, "text": "I am 70."}],
                }
            ],
        }
    )
    assert [e.key for e in doc.entries()] == ["attribute/age/1", "attribute/age/7"]
    assert parse_catalog_yaml(catalog_to_yaml(doc), source="m").entries() == doc.entries()
    csv_doc = parse_catalog_csv(catalog_to_csv(doc), source="m", name="t")
    assert csv_doc.entries() == doc.entries()


def test_versioning_in_db(session) -> None:
    doc = load_default_catalog()
    first = import_catalog(doc, session=session)
    assert (first.version, first.created, first.perturbations) == (1, True, 98)
    same = import_catalog(doc, session=session)
    assert (same.catalog_id, same.version, same.created) == (first.catalog_id, 1, False)
    data = yaml.safe_load(catalog_to_yaml(doc))
    data["categories"][3]["stimuli"].append("I am a grandmother.")
    changed = import_catalog(CatalogDocument.model_validate(data), session=session)
    assert (changed.version, changed.created, changed.perturbations) == (2, True, 99)
    assert changed.content_hash != first.content_hash
    assert resolve_catalog(None, session=session).version == 2
    assert resolve_catalog("driftlens-default@1", session=session).id == first.catalog_id


def test_cli_export_import_round_trip(cli, tmp_path: Path) -> None:
    out_yaml, out_csv = tmp_path / "cat.yaml", tmp_path / "cat.csv"
    assert cli("perturbations", "export", "--out", str(out_yaml)).exit_code == 0
    assert cli("perturbations", "export", "--out", str(out_csv)).exit_code == 0
    assert read_catalog_file(out_yaml) == load_default_catalog()
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text(encoding="utf-8"), newline="")))
    assert len(rows) == 98 and rows[1]["text"] == "\n"
    # Re-importing the export changes nothing.
    res = cli("perturbations", "import", str(out_yaml))
    assert res.exit_code == 0 and "reusing version 1" in res.output
    res = cli("perturbations", "import", str(out_csv), "--name", "driftlens-default")
    assert res.exit_code == 0 and "reusing version 1" in res.output
    # An edit becomes version 2 and is what `list` shows.
    out_csv.write_text(out_csv.read_text(encoding="utf-8").replace("I am a teacher.", "I teach."))
    res = cli("perturbations", "import", str(out_csv), "--name", "driftlens-default")
    assert res.exit_code == 0 and "new version 2" in res.output
    listed = cli("perturbations", "list", "--json", "--class", "attribute")
    items = [json.loads(line) for line in listed.output.splitlines()]
    assert len(items) == 60
    assert {i["catalog_version"] for i in items} == {2}
    assert any(i["text"] == "I teach." for i in items)


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        (
            "key,condition_class,category,text\n,attribute,age,I am 30.\n,planet,age,x\n",
            3,
            "condition_class",
        ),
        ("key,condition_class,category,text\nattribute/age/1,attribute,age,\n", 2, "empty text"),
        ("key,condition_class,category,text\nattribute/sex/1,attribute,age,I am 3.\n", 2, "key"),
        (
            "key,condition_class,category,text\n,attribute,age,a\nattribute/age/1,attribute,age,b\n",
            3,
            "duplicate key",
        ),
        ("key,condition_class,category,text\n,attribute,Bad Cat,a\n", 2, "invalid category"),
    ],
)
def test_csv_bad_rows_name_file_and_line(
    tmp_path: Path, content: str, line: int, fragment: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_catalog_file(path)
    message = str(info.value)
    assert str(path) in message and f"line {line}" in message and fragment in message


def test_yaml_bad_node_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: x\ncategories:\n  - condition_class: attribute\n    category: age\n"
        "    stimuli: [I am 3.]\n  - condition_class: planet\n    category: mars\n"
        "    stimuli: [hi]\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"bad\.yaml line 6: categories\.1\.condition_class"):
        read_catalog_file(path)
    path.write_text("name: x\ncategories: [\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.yaml line \d+"):
        read_catalog_file(path)


def test_cli_import_error_is_input_error(cli, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("key,condition_class,category,text\n,attribute,age,\n", encoding="utf-8")
    res = cli("perturbations", "import", str(path))
    assert isinstance(res.exception, InputError)
    assert "line 2" in str(res.exception)
