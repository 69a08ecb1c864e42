"""``driftlens plan calibration``: how many human labels reach a target half-width.

The pilot is a report's ``stats.json`` whose ``calibrated`` block holds a calibrated mean
(its rectifier and model SDs, λ, items and humans), or the numbers given by hand; the rule
is :func:`driftlens_core.ppi.humans_for_half_width` (a simple random slice, normal interval).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from app.cli.console import out_console
from app.cli.output import echo_json
from storage.errors import InputError

_out = out_console()

plan_app = typer.Typer(help="Plan a study's size before running it.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add ``plan`` to the root application."""
    app.add_typer(plan_app, name="plan")


def _pilot(stats: Path, what: str, model: str | None, judge: str | None) -> dict[str, Any]:
    """The calibrated row of ``what`` in a stats.json (one sentence when there is none)."""
    try:
        data = json.loads(stats.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"Cannot read {stats} as a report's stats.json ({exc}).") from None
    block = data.get("calibrated") if isinstance(data, dict) else None
    if not isinstance(block, dict) or not block.get("rows"):
        raise InputError(
            f"{stats} has no calibrated estimates: pull a human study of the report's kind "
            "and write the report again (or give --rectifier-sd, --model-sd and --items)."
        )
    rows = [
        r
        for r in block["rows"]
        if r.get("what") == what
        and (model is None or r.get("model") == model)
        and (judge is None or r.get("judge") == judge)
        and r.get("rectifier_sd") is not None
    ]
    if not rows:
        known = sorted({str(r.get("what")) for r in block["rows"] if r.get("rectifier_sd")})
        raise InputError(
            f"{stats} has no calibrated mean of {what!r} for that model and judge; "
            f"choose one of {', '.join(known) or 'none'}."
        )
    if len(rows) > 1:
        pairs = ", ".join(f"{r['model']} / {r['judge']}" for r in rows)
        raise InputError(f"Several pilots match ({pairs}); name one with --model and --judge.")
    return dict(rows[0])


@plan_app.command("calibration")
def plan_calibration(
    half_width: Annotated[
        float, typer.Option("--half-width", help="Target half-width of the 95% interval.")
    ],
    stats: Annotated[
        Path | None, typer.Option("--stats", help="A report's stats.json with a pilot slice.")
    ] = None,
    what: Annotated[str, typer.Option("--what", help="Which calibrated mean (e.g. d2).")] = "",
    model: Annotated[str | None, typer.Option("--model")] = None,
    judge: Annotated[str | None, typer.Option("--judge")] = None,
    rectifier_sd: Annotated[
        float | None, typer.Option("--rectifier-sd", help="SD of human − λ·model (pilot).")
    ] = None,
    model_sd: Annotated[float | None, typer.Option("--model-sd")] = None,
    items: Annotated[int | None, typer.Option("--items", help="Items the model labels.")] = None,
    lam: Annotated[float, typer.Option("--lambda", help="λ (with numbers by hand).")] = 1.0,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Human labels a calibration slice needs for a target half-width (PPI++ planner)."""
    from driftlens_core.ppi import humans_for_half_width

    if stats is not None:
        if not what:
            raise InputError("--stats needs --what (the calibrated mean to plan, e.g. d2).")
        row = _pilot(stats, what, model, judge)
        r_sd, m_sd = float(row["rectifier_sd"]), float(row["model_sd"])
        n_items, lam = int(row["n_items"]), float(row["lam"])
        source = f"pilot: {row['n_human']} humans in {stats.name} ({row['model']} / {row['judge']})"
    else:
        if rectifier_sd is None or model_sd is None or items is None:
            raise InputError(
                "Give --stats FILE --what NAME, or --rectifier-sd, --model-sd and --items."
            )
        r_sd, m_sd, n_items = rectifier_sd, model_sd, items
        source = "pilot numbers given"
    if half_width <= 0 or n_items < 1 or r_sd < 0 or m_sd < 0:
        raise InputError("--half-width and --items must be positive and the SDs non-negative.")
    need = humans_for_half_width(
        rectifier_sd=r_sd, model_sd=m_sd, n_items=n_items, lam=lam, half_width=half_width
    )
    result = {
        "half_width": half_width,
        "humans": need,
        "items": n_items,
        "rectifier_sd": r_sd,
        "model_sd": m_sd,
        "lambda": lam,
        "source": source,
    }
    if as_json:
        echo_json(result)
        return
    if need is None:
        _out.print(
            f"No slice of the {n_items} items reaches ±{half_width:g} ({source}): "
            "widen the target or add items."
        )
    else:
        _out.print(
            f"{need} human labels of {n_items} items reach ±{half_width:g} "
            f"(lambda {lam:.2f}, rectifier SD {r_sd:.3f}, model SD {m_sd:.3f}; {source})."
        )
