"""``driftlens ontology compare-run``: one run's labels and drift under two ontology versions."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from app.cli.console import fmt_finite, fmt_p, out_console
from app.cli.context import session_for
from app.cli.output import write_json
from app.cli.request_limits import bootstrap_option

_out = out_console(width=None if os.isatty(1) else 160)


def compare_run_cmd(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="The run whose labels are compared.")],
    version_a: Annotated[str, typer.Argument(help="Version A (id, NAME or NAME@N).")],
    version_b: Annotated[str, typer.Argument(help="Version B (id, NAME or NAME@N).")],
    labeler: Annotated[
        str, typer.Option("--labeler", "-l", help="Whose labels are compared (required).")
    ],
    bootstrap: int = bootstrap_option(2000),
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    alpha: Annotated[float, typer.Option("--alpha", help="Level of the BH-adjusted tests.")] = 0.05,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the comparison as JSON here.")
    ] = None,
) -> None:
    """What moving a run's labels from version A to B did: leaf flow, κ, flipped conclusions."""
    from storage.errors import InputError
    from study.reasoning.version_compare import compare_versions

    if not 0 < alpha < 0.5:
        raise InputError("--alpha must lie between 0 and 0.5.")
    with session_for(ctx) as session:
        vc = compare_versions(run, version_a, version_b, labeler=labeler, session=session,
                              n_boot=bootstrap, seed=seed, alpha=alpha)  # fmt: skip
    _out.print(
        f"{vc.run} ({vc.labeler}): {vc.version_a} → {vc.version_b}: {vc.changed} of "
        f"{vc.shared_steps} steps changed leaf ({fmt_finite(vc.changed_share * 100, 1)} %), "
        f"Cohen's κ {fmt_finite(vc.kappa)}; {vc.only_a} step(s) labeled only under {vc.version_a}, "
        f"{vc.only_b} only under {vc.version_b}."
    )
    table = Table(title="Per-leaf flow (most steps first)", title_justify="left")
    for name in ("leaf (A)", "steps", "kept", "went to (B)"):
        table.add_column(name, justify="left" if name != "steps" and name != "kept" else "right")
    for f in vc.flows:
        moved = ", ".join(f"{leaf} {n}" for leaf, n in f.to if leaf != f.leaf_a) or "–"
        table.add_row(f.leaf_a, str(f.steps), str(f.kept), moved)
    _out.print(table)
    flips = Table(title="Drift conclusions that flipped (BH-adjusted p < α under one version only)",
                  title_justify="left")  # fmt: skip
    for name in ("metric", "scope", "d_rel A", "p adj A", "d_rel B", "p adj B"):
        flips.add_column(name)
    for fl in vc.flips:
        flips.add_row(fl.metric, fl.scope, fmt_finite(fl.drel_a), fmt_p(fl.p_adjusted_a),
                      fmt_finite(fl.drel_b), fmt_p(fl.p_adjusted_b))  # fmt: skip
    _out.print(flips if vc.flips else "No drift conclusion flipped between the versions.")
    if json_out is not None:
        write_json(json_out, vc.to_dict())
        _out.print(f"JSON written to {json_out}")
