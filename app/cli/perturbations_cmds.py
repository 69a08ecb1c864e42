"""``driftlens perturbations``: list, export and import the perturbation catalog."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from app.cli.console import out_console
from app.cli.context import session_for
from app.cli.groups import command_group
from app.cli.output import echo_jsonl

_out = out_console()

_CATALOG_HELP = "Catalog NAME or NAME@VERSION (default: the bundled driftlens-default)."


def list_cmd(
    ctx: typer.Context,
    condition_class: str | None = typer.Option(
        None, "--class", help="Only noise, attribute or life_event."
    ),
    catalog: str | None = typer.Option(None, "--catalog", help=_CATALOG_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON lines instead of a table."),
) -> None:
    """List the perturbations of a catalog version."""
    from storage.errors import InputError
    from study.catalog import CONDITION_CLASSES, catalog_perturbations, resolve_catalog

    if condition_class is not None and condition_class not in CONDITION_CLASSES:
        raise InputError(
            f"Unknown class {condition_class!r}: use one of {', '.join(CONDITION_CLASSES)}."
        )
    with session_for(ctx) as session:
        cat = resolve_catalog(catalog, session=session)
        assert cat.id is not None
        rows = [
            p
            for p in catalog_perturbations(cat.id, session=session)
            if condition_class is None or p.condition_class == condition_class
        ]
    if as_json:
        echo_jsonl(
            {
                "key": p.key,
                "condition_class": p.condition_class,
                "category": p.category,
                "text": p.text,
                "catalog": cat.name,
                "catalog_version": cat.version,
            }
            for p in rows
        )
        return
    table = Table(title=f"{cat.name} v{cat.version}: {len(rows)} perturbation(s)")
    for column in ("key", "class", "category", "text"):
        table.add_column(column)
    for p in rows:
        # repr() for content-free stimuli so that a space or a tab is visible.
        shown = repr(p.text) if not p.text.strip() or p.condition_class == "noise" else p.text
        table.add_row(Text(p.key), Text(p.condition_class), Text(p.category), Text(shown))
    _out.print(table)


def export_cmd(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", help="Output file, .yaml/.yml or .csv."),
    catalog: str | None = typer.Option(None, "--catalog", help=_CATALOG_HELP),
) -> None:
    """Write a catalog version to YAML (grouped, editable) or CSV (one row per stimulus)."""
    from storage.errors import InputError
    from study.catalog import catalog_document, catalog_to_csv, catalog_to_yaml, resolve_catalog

    suffix = out.suffix.lower()
    if suffix not in (".yaml", ".yml", ".csv"):
        raise InputError(f"{out}: export to a .yaml, .yml or .csv file.")
    with session_for(ctx) as session:
        cat = resolve_catalog(catalog, session=session)
        doc = catalog_document(cat, session=session)
    text = catalog_to_csv(doc) if suffix == ".csv" else catalog_to_yaml(doc)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8", newline="")
    _out.print(
        f"Wrote {len(doc.entries())} perturbations of {cat.name} v{cat.version} to {out}.",
        markup=False,
    )


def import_cmd(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="Catalog file, .yaml/.yml or .csv."),
    name: str | None = typer.Option(
        None, "--name", help="Catalog name for CSV files (default: the file name)."
    ),
) -> None:
    """Import a catalog: identical content reuses the latest version, changes add a version."""
    from study.catalog import import_catalog, read_catalog_file

    if not file.is_file():
        raise FileNotFoundError(2, "No such file", str(file))
    doc = read_catalog_file(file, name=name)
    with session_for(ctx) as session:
        result = import_catalog(doc, session=session)
    what = "new version" if result.created else "unchanged, reusing version"
    _out.print(
        f"Catalog {result.name}: {what} {result.version} ({result.perturbations} perturbations).",
        markup=False,
    )


perturbations_app, register = command_group(
    "perturbations",
    "The perturbation catalog (memory lines): list, export, import.",
    {"list": list_cmd, "export": export_cmd, "import": import_cmd},
)
