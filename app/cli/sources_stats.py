"""The source-reliance statistics as ``driftlens sources stats`` and ``run`` print them.

The ``stats`` and ``run`` commands print the same result (``stats.json``'s dictionary):
per model and dataset the PAR/SDR table by source, the odds ratios and shares, the
instruction variants, notes, KL against the bare condition and the regressions' state.
"""

from __future__ import annotations

import os
from typing import Any

from rich.table import Table

from app.cli.console import SafeConsole, fmt_num, term

_out = SafeConsole(highlight=False, width=None if os.isatty(1) else 150)


def render_stats(result: dict[str, Any]) -> None:
    """Print the per-(model, dataset) summary tables of a stats result."""
    from study.sources.report import effect_lines

    meta = result["meta"]
    for model, datasets in result["models"].items():
        for dataset, c in datasets.items():
            table = Table(
                title=(
                    f"{term(model)} · {term(dataset)} — {c['n_questions']} questions, "
                    f"bare accuracy {fmt_num(c['bare_accuracy'])} (B = {meta['bootstrap']})"
                ),
                title_justify="left",
            )
            for col in ("source", "PAR+", "SDR+", "PAR-", "SDR-", "type", "P(type)"):
                table.add_column(col, justify="left" if col in ("source", "type") else "right")
            for s in ("user", "doc"):
                b = c["behaviour"][s]
                ci = c["rate_ci"][s]
                t = b["type"]
                table.add_row(
                    s,
                    f"{fmt_num(c['par_plus'][s])} "
                    f"[{fmt_num(ci['par_plus'][0])}, {fmt_num(ci['par_plus'][1])}]",
                    f"{fmt_num(c['sdr_plus'][s])} "
                    f"[{fmt_num(ci['sdr_plus'][0])}, {fmt_num(ci['sdr_plus'][1])}]",
                    fmt_num(c["par_minus"][s]),
                    fmt_num(c["sdr_minus"][s]),
                    t or ("undefined" if c.get("usable", {}).get("assessable", True) else "–"),
                    fmt_num(b["share"][t]) if t else "–",
                )
            _out.print(table)
            o = c["odds_ratios"]
            if c.get("separation"):
                # a (quasi-)separated fit has no finite odds ratio: a number such as 4.3e17
                # next to its shares would read as a measurement
                _out.print(
                    "  odds ratios and Self%/U%/D%: not estimable (separation: some variant "
                    "is answered the same way every time; more items are needed)"
                )
            else:
                _out.print(
                    f"  odds ratios: parametric {fmt_num(o['parametric'])}, "
                    f"user {fmt_num(o['user'])}, "
                    f"doc {fmt_num(o['doc'])}; Self% {fmt_num(c['self_pct'], 1)}, "
                    f"U% {fmt_num(c['user_pct'], 1)}, D% {fmt_num(c['doc_pct'], 1)}, "
                    f"U%/D% {fmt_num(c['u_over_d'])}"
                )
            nb = c.get("without_bare")
            if nb:
                _out.print(
                    f"  without bare rows: Self% {fmt_num(nb['self_pct'], 1)}, "
                    f"U%/D% {fmt_num(nb['u_over_d'])}"
                )
            for instr, e in (c.get("instruction_effect") or {}).items():
                _out.print(
                    f"  instruction {instr}: PAR+ user {fmt_num(e['par_plus']['user'])} doc "
                    f"{fmt_num(e['par_plus']['doc'])}, "
                    f"SDR+ user {fmt_num(e['sdr_plus']['user'])} doc "
                    f"{fmt_num(e['sdr_plus']['doc'])}, Self% {fmt_num(e['self_pct'], 1)}"
                )
            for line in effect_lines(c):
                _out.print(f"  {term(line)}")
            if c["kl"]:
                kl = ", ".join(f"{v} {fmt_num(x)}" for v, x in c["kl"].items())
                _out.print(f"  KL vs bare (bits): {kl}")
            for r in c["regressions"]:
                if r.get("error"):
                    _out.print(
                        f"  regression tier {term(r['tier'])!r} {r['ordering'] or '-'}: "
                        f"not fitted ({term(r['error'])})"
                    )
