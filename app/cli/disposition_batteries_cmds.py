"""``driftlens disposition batteries``: check, export and import the disposition batteries."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from app.cli.console import SafeConsole

_out = SafeConsole(highlight=False, width=None if os.isatty(1) else 160)


def read_batteries_arg(path: Path | None) -> Any:
    from study.disposition.items import load_sample_batteries, read_batteries

    return read_batteries(path) if path is not None else load_sample_batteries()


batteries_app = typer.Typer(
    name="batteries", help="Batteries of stems x paraphrases.", no_args_is_help=True
)


def _write_doc(doc: Any, out: Path | None, fmt: str) -> None:
    from study.disposition.items import batteries_to_csv, batteries_to_yaml

    if fmt not in ("yaml", "csv"):
        raise typer.BadParameter("--format must be yaml or csv")
    text = batteries_to_yaml(doc) if fmt == "yaml" else batteries_to_csv(doc)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        _out.print(f"Wrote {out}")


@batteries_app.command("check")
def batteries_check_cmd(
    file: Path | None = typer.Argument(None, help="YAML or CSV (default: the shipped sample)."),
) -> None:
    """Validate a battery file and print what it holds."""
    doc = read_batteries_arg(file)
    for b in doc.batteries:
        paras = sorted({len(s.paraphrases) for s in b.stems})
        _out.print(
            f"{escape(b.name)}: {len(b.stems)} stems, paraphrases per stem "
            f"{'/'.join(map(str, paras))}, {len(b.probes())} probes; aligned category "
            f"{escape(b.aligned_category)} of {', '.join(escape(c) for c in b.category_names)}"
        )
    _out.print(f"content hash {doc.content_hash()[:16]}")


@batteries_app.command("export")
def batteries_export_cmd(
    file: Path | None = typer.Argument(None, help="YAML or CSV (default: the shipped sample)."),
    out: Path | None = typer.Option(None, "--out", help="Write here (default: stdout)."),
    fmt: str = typer.Option("yaml", "--format", help="yaml or csv."),
) -> None:
    """Convert batteries between YAML and CSV (formula-looking CSV cells are neutralised)."""
    _write_doc(read_batteries_arg(file), out, fmt)


@batteries_app.command("import-harmbench")
def batteries_harmbench_cmd(
    file: Path = typer.Argument(..., help="A HarmBench-format CSV you bring (none is shipped)."),
    out: Path = typer.Option(..., "--out", help="Battery file to write (.yaml or .csv)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most this many stems."),
    functional_category: str = typer.Option("standard", "--functional-category"),
) -> None:
    """A refusal battery from HarmBench's CSV (chemical/biological behaviours excluded)."""
    from study.disposition.items import import_harmbench_csv

    doc = import_harmbench_csv(file, limit=limit, functional_category=functional_category)
    _write_doc(doc, out, "csv" if out.suffix.lower() == ".csv" else "yaml")
