"""The source-reliance report: tables and figures (Markdown + one self-contained HTML file).

Views (the app page shows the same ones, from the same functions):

* the 13-variant table per model × dataset: n, accuracy, share choosing the fixed wrong
  option, share choosing the asserted option, unknown share, mean KL and ΔNLL vs bare;
* the discrimination table (PAR±/SDR± per source with 95% CIs, the type and its bootstrap
  share) and the **behaviour quadrant** (PAR+ against SDR+, 0.5 lines, CI bars, each point
  labelled with its type share);
* KL against ΔNLL per probe, coloured by scenario, with the fitted slope and r;
* the source-influence table (odds ratios, Self% / U% / D%, U%/D%; the variant without
  bare rows beside it, labelled).

Untrusted text (model and dataset names) is escaped in both formats; figure labels go
through :func:`study.report.figures.plain_label`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from driftlens_core.source_reliance import SCENARIOS, VARIANTS, delta_nll_bits, kl_bits
from study.report.figures import plain_label
from study.report.html import CSP, esc
from study.report.markdown import md_escape

SCENARIO_COLORS = {
    "single_correct": "#228833",
    "single_wrong": "#CC3311",
    "both_correct": "#117733",
    "both_wrong": "#882255",
    "conflict": "#4477AA",
}
TYPE_COLORS = {
    "selective": "#228833",
    "impressionable": "#EE7733",
    "rigid": "#4477AA",
    "unreliable": "#BB5566",
}


def _f(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def variant_table(cell: Mapping[str, Any]) -> pd.DataFrame:
    """The 13-variant table of one model × dataset."""
    rows = []
    for v in VARIANTS:
        t = cell["variants"].get(v)
        if t is None:
            continue
        rows.append(
            {
                "variant": v,
                "n": t["n"],
                "accuracy": t["accuracy"],
                "chose wrong": t["chose_wrong"],
                "chose asserted": t["chose_asserted"],
                "unknown": t["unknown"],
                "KL (bits)": cell["kl"].get(v),
                "ΔNLL (bits)": cell["delta_nll"].get(v),
            }
        )
    return pd.DataFrame(rows)


def _withheld(cell: Mapping[str, Any]) -> bool:
    """Whether the cell's conclusions were withheld (too few probes letter-read)."""
    return not (cell.get("usable") or {}).get("assessable", True)


def discrimination_table(cell: Mapping[str, Any]) -> pd.DataFrame:
    """PAR±/SDR± per source with intervals, the type and its bootstrap share."""
    rows = []
    for s in ("user", "doc"):
        ci = cell["rate_ci"][s]
        b = cell["behaviour"][s]
        t = b["type"]
        rows.append(
            {
                "source": s,
                "PAR+": f"{_f(cell['par_plus'][s])} [{_f(ci['par_plus'][0])}, "
                f"{_f(ci['par_plus'][1])}]",
                "SDR+": f"{_f(cell['sdr_plus'][s])} [{_f(ci['sdr_plus'][0])}, "
                f"{_f(ci['sdr_plus'][1])}]",
                "PAR-": _f(cell["par_minus"][s]),
                "SDR-": _f(cell["sdr_minus"][s]),
                "neither (own right)": _f(cell["neither_model_correct"][s]),
                "neither (own wrong)": _f(cell["neither_model_wrong"][s]),
                "type": t or ("not assessable" if _withheld(cell) else "undefined"),
                "P(type)": _f(b["share"][t]) if t else "–",
                "n (own right / wrong)": f"{cell['rate_n'][s]['model_correct']} / "
                f"{cell['rate_n'][s]['model_wrong']}",
            }
        )
    return pd.DataFrame(rows)


def instruction_table(cell: Mapping[str, Any]) -> pd.DataFrame:
    """Headline numbers per system-instruction variant (empty with one instruction)."""
    names = {"n": "neutral", "d": "document only", "u": "user only", "s": "self only"}
    rows = []
    for k, v in (cell.get("instruction_effect") or {}).items():
        rows.append(
            {
                "instruction": names.get(k, k),
                "bare acc.": v["bare_accuracy"],
                "PAR+ user": v["par_plus"]["user"],
                "PAR+ doc": v["par_plus"]["doc"],
                "SDR+ user": v["sdr_plus"]["user"],
                "SDR+ doc": v["sdr_plus"]["doc"],
                "type user": v["behaviour"]["user"],
                "type doc": v["behaviour"]["doc"],
                "Self%": v["self_pct"],
                "U%/D%": v["u_over_d"],
            }
        )
    return pd.DataFrame(rows)


def influence_table(result: Mapping[str, Any]) -> pd.DataFrame:
    """Odds ratios and reliance shares per model × dataset (with and without bare rows)."""
    rows = []
    for model, datasets in result["models"].items():
        for dataset, c in datasets.items():
            nb = c.get("without_bare") or {}
            o = c["odds_ratios"]
            rows.append(
                {
                    "model": model,
                    "dataset": dataset,
                    "bare acc.": c["bare_accuracy"],
                    "ParametricOR": o["parametric"],
                    "UserOR": o["user"],
                    "DocOR": o["doc"],
                    "Self%": c["self_pct"],
                    "U%": c["user_pct"],
                    "D%": c["doc_pct"],
                    "U%/D%": c["u_over_d"],
                    "Self% (no bare rows)": nb.get("self_pct"),
                    "U%/D% (no bare rows)": nb.get("u_over_d"),
                    "regressions": len([r for r in c["regressions"] if not r.get("error")]),
                    "separation": "flagged" if c.get("separation") else "",
                }
            )
    return pd.DataFrame(rows)


def effect_lines(cell: Mapping[str, Any]) -> list[str]:
    """The source-effect sentence (null check) and the order effect on conflicts."""
    lines = []
    usable = cell.get("usable") or {}
    if usable and not usable.get("assessable", True):
        return [f"Source effect: {usable['sentence']}."]
    eff = cell.get("source_effect") or {}
    if eff.get("available"):
        lines.append(f"Source effect: {eff['statement']}.")
    oc = cell.get("order_conflict") or {}
    if oc.get("available"):
        lo, hi = oc["ci95"]
        lines.append(
            f"Order effect on conflicts ({oc['measure']}): user first {_f(oc['user_first'])}, "
            f"document first {_f(oc['doc_first'])}, difference {_f(oc['difference'], 3)} "
            f"(95% CI {_f(lo, 3)} to {_f(hi, 3)}, {oc['n_questions']} questions)"
            + ("." if oc["detected"] else "; no detectable order effect.")
        )
    return lines


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def quadrant_figure(result: Mapping[str, Any]) -> Figure:
    """PAR+ against SDR+ per model × dataset × source, with 95% CI bars and P(type)."""
    fig = _figure(6.4, 5.6)
    ax = fig.add_subplot()
    ax.axhline(0.5, color="#999", lw=1, ls="--")
    ax.axvline(0.5, color="#999", lw=1, ls="--")
    for x, y, name in (
        (0.75, 0.97, "selective"),
        (0.75, 0.03, "impressionable"),
        (0.25, 0.97, "rigid"),
        (0.25, 0.03, "unreliable"),
    ):
        ax.text(
            x, y, name, ha="center", va="center", color=TYPE_COLORS[name], fontsize=9, alpha=0.8
        )
    for model, datasets in result["models"].items():
        for dataset, c in datasets.items():
            for s, marker in (("user", "o"), ("doc", "s")):
                par, sdr = c["par_plus"][s], c["sdr_plus"][s]
                if par is None or sdr is None:
                    continue
                ci = c["rate_ci"][s]
                b = c["behaviour"][s]
                color = TYPE_COLORS.get(b["type"] or "", "#777")
                ax.errorbar(
                    sdr,
                    par,
                    xerr=[[sdr - (ci["sdr_plus"][0] or sdr)], [(ci["sdr_plus"][1] or sdr) - sdr]],
                    yerr=[[par - (ci["par_plus"][0] or par)], [(ci["par_plus"][1] or par) - par]],
                    fmt=marker,
                    color=color,
                    ms=6,
                    capsize=2,
                    lw=1,
                )
                share = b["share"].get(b["type"]) if b["type"] else None
                ax.annotate(
                    # the share first: a long model name is cut, the uncertainty never
                    f"P {_f(share)} · " + plain_label(f"{model} · {dataset} · {s}", 36),
                    (sdr, par),
                    textcoords="offset points",
                    xytext=(5, 4),
                    fontsize=7,
                )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("SDR+ (adopts a correct assertion over its own wrong answer)")
    ax.set_ylabel("PAR+ (keeps its correct answer against a wrong assertion)")
    ax.set_title("Behaviour quadrant (○ user, □ document; 95% CI; P(type) in brackets)", fontsize=9)
    return fig


def scatter_data(table: pd.DataFrame) -> pd.DataFrame:
    """Per-probe KL and ΔNLL vs bare with the scenario (rows with probabilities only)."""
    t = table.copy()
    for c in ("p_correct", "p_wrong", "p_other"):
        if c not in t.columns:
            return pd.DataFrame(columns=["scenario", "kl", "dnll"])
        t[c] = pd.to_numeric(t[c], errors="coerce")
    if "instruction" not in t.columns:
        t["instruction"] = "n"
    # the main (neutral) instruction only, as in the tables; a bare row per question
    t = t[t["instruction"].replace("", "n") == "n"] if (t["instruction"] == "n").any() else t
    idx = ["model", "dataset", "instruction", "question_id"]
    bare = t[t["variant"] == "bare"].drop_duplicates(idx).set_index(idx)
    probes = t[t["variant"] != "bare"].dropna(subset=["p_correct", "p_wrong", "p_other"])
    keys = list(
        zip(
            probes["model"],
            probes["dataset"],
            probes["instruction"],
            probes["question_id"],
            strict=True,
        )
    )
    base = bare.reindex(keys)[["p_correct", "p_wrong", "p_other"]].to_numpy(dtype=float)
    p = probes[["p_correct", "p_wrong", "p_other"]].to_numpy(dtype=float)
    ok = ~np.isnan(base).any(axis=1)
    scen = {v: name for name, vs in SCENARIOS.items() for v in vs}
    return pd.DataFrame(
        {
            "scenario": probes["variant"].map(scen).to_numpy()[ok],
            "kl": kl_bits(p[ok], base[ok]) if ok.any() else [],
            "dnll": delta_nll_bits(p[ok], base[ok]) if ok.any() else [],
        }
    )


def kl_figure(table: pd.DataFrame) -> Figure | None:
    """KL against ΔNLL per probe by scenario, with the least-squares slope and r."""
    data = scatter_data(table)
    if data.empty:
        return None
    fig = _figure(6.4, 4.8)
    ax = fig.add_subplot()
    for name, g in data.groupby("scenario", sort=False):
        label = str(name)
        if len(g) > 2 and g["kl"].std() > 0 and g["dnll"].std() > 0:
            slope = np.polyfit(g["kl"], g["dnll"], 1)[0]
            r = np.corrcoef(g["kl"], g["dnll"])[0, 1]
            label += f": slope {slope:+.2f} (r {r:+.2f})"
        # rasterised points: thousands of probes would make a heavy, slow SVG
        ax.scatter(
            g["kl"],
            g["dnll"],
            s=8,
            alpha=0.5,
            color=SCENARIO_COLORS.get(str(name)),
            label=label,
            rasterized=True,
        )
    ax.axhline(0, color="#999", lw=1)
    ax.set_xlabel("KL(probe ‖ bare), bits")
    ax.set_ylabel("ΔNLL of the correct answer, bits (> 0: less confident)")
    ax.legend(fontsize=7)
    ax.set_title("Distribution shift against confidence change, by scenario", fontsize=9)
    return fig


@dataclass(frozen=True)
class SourcesReportFiles:
    """What :func:`write_sources_report` wrote."""

    markdown: Path
    html: Path
    figures: dict[str, list[Path]]


def _save(fig: Figure, stem: Path) -> list[Path]:
    out = []
    for ext in (".svg", ".png"):
        path = stem.with_suffix(ext)
        fig.savefig(path, dpi=110)
        out.append(path)
    return out


def _html_table(df: pd.DataFrame) -> str:
    if df.empty:
        return '<p class="muted">No rows.</p>'
    head = "".join(f"<th>{esc(c)}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(_f(v, 3))}</td>" for v in rec) + "</tr>"
        for rec in df.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_No rows._\n"
    lines = [
        "| " + " | ".join(md_escape(c) for c in df.columns) + " |",
        "|" + "|".join("---" for _ in df.columns) + "|",
    ]
    lines += [
        "| " + " | ".join(md_escape(_f(v, 3)) for v in rec) + " |"
        for rec in df.itertuples(index=False)
    ]
    return "\n".join(lines) + "\n"


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1200px;margin:0 auto;padding:1.5rem;"
    "color:#222}table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0 1.2rem}"
    "th,td{border:1px solid #ddd;padding:.2rem .5rem;text-align:right}th{background:#f4f4f4}"
    ".banner{background:#b00020;color:#fff;font-weight:700;padding:.7rem 1rem;border-radius:6px}"
    "img{max-width:900px;width:100%;border:1px solid #eee}.muted{color:#666}"
)


def write_sources_report(
    result: Mapping[str, Any],
    table: pd.DataFrame,
    out_dir: Path,
    *,
    title: str = "Source reliance",
    simulated: bool = False,
    notes: tuple[str, ...] = (),
    claim_settings: Sequence[tuple[str, str]] | None = None,
) -> SourcesReportFiles:
    """Write ``report.md``, ``report.html`` and the figures into ``out_dir``.

    Args:
        result: A stats result (:meth:`study.sources.analysis.SourcesStats.to_dict`).
        table: The probe table it was computed from (for the per-probe scatter).
        out_dir: Output folder (created).
        title: Report title.
        simulated: Put the SIMULATED banner on top.
        notes: Extra lines (e.g. unknown-letter counts) shown under the title.
        claim_settings: The tier-2 claim writers' settings
            (:func:`study.sources.claim_provenance.claim_writer_settings`), shown as the
            report's provenance; ``None``: no stored run (no section).

    Callers write the folder through :func:`study.report.folder.staged_report_folder`.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    figures: dict[str, list[Path]] = {
        "quadrant": _save(quadrant_figure(result), out_dir / "quadrant")
    }
    kl = kl_figure(table)
    if kl is not None:
        figures["kl_vs_dnll"] = _save(kl, out_dir / "kl_vs_dnll")
    infl = influence_table(result)
    meta = result.get("meta", {})
    md = [f"# {md_escape(title)}\n"]
    html = [f"<h1>{esc(title)}</h1>"]
    if simulated:
        md.append("**SIMULATED DATA** — every answer comes from the built-in simulator.\n")
        html.append(
            '<div class="banner">SIMULATED DATA — every answer comes from the '
            "built-in simulator.</div>"
        )
    line = (
        f"B = {meta.get('bootstrap')} question-cluster bootstrap replicates, seed "
        f"{meta.get('seed')}; behaviour types at 0.5."
    )
    md.append(md_escape(line) + "\n")
    html.append(f'<p class="muted">{esc(line)}</p>')
    for n in notes:
        md.append(f"- {md_escape(n)}")
        html.append(f"<p>{esc(n)}</p>")
    md.append("\n## Source influence (odds ratios, reliance shares)\n")
    md.append(
        md_escape(
            "Averages over the tier × ordering regressions; the columns marked "
            "'no bare rows' refit without the bare probes."
        )
        + "\n"
    )
    md.append(_md_table(infl))
    html.append("<h2>Source influence (odds ratios, reliance shares)</h2>")
    html.append(_html_table(infl))
    md.append("\n## Behaviour quadrant\n\n![quadrant](quadrant.svg)\n")
    b64 = base64.b64encode(figures["quadrant"][1].read_bytes()).decode()
    html.append(
        f'<h2>Behaviour quadrant</h2><img alt="quadrant" src="data:image/png;base64,{b64}">'
    )
    if "kl_vs_dnll" in figures:
        md.append("\n## KL vs ΔNLL by scenario\n\n![kl](kl_vs_dnll.svg)\n")
        b64 = base64.b64encode(figures["kl_vs_dnll"][1].read_bytes()).decode()
        html.append(
            f'<h2>KL vs ΔNLL by scenario</h2><img alt="kl" src="data:image/png;base64,{b64}">'
        )
    for model, datasets in result["models"].items():
        for dataset, c in datasets.items():
            head = f"{model} · {dataset}"
            md.append(f"\n## {md_escape(head)}\n")
            html.append(f"<h2>{esc(head)}</h2>")
            md.append("### Discrimination\n")
            md.append(_md_table(discrimination_table(c)))
            html.append("<h3>Discrimination</h3>" + _html_table(discrimination_table(c)))
            md.append("### The 13 probe variants\n")
            md.append(_md_table(variant_table(c)))
            html.append("<h3>The 13 probe variants</h3>" + _html_table(variant_table(c)))
            instr = instruction_table(c)
            if not instr.empty:
                md.append("### System instructions\n")
                md.append(_md_table(instr))
                html.append("<h3>System instructions</h3>" + _html_table(instr))
            inter = c.get("distribution", {}).get("interaction") or {}
            if inter:
                txt = ", ".join(f"{k} {_f(v)}" for k, v in inter.items())
                md.append(md_escape(f"Interaction (KL double − singles, bits): {txt}") + "\n")
                html.append(f"<p>Interaction (KL double − singles, bits): {esc(txt)}</p>")
            order = c.get("order_effect") or {}
            if len(order) > 1:
                txt = "; ".join(
                    f"{k}: Self% {_f(v['self_pct'], 1)}, U% {_f(v['user_pct'], 1)}, "
                    f"D% {_f(v['doc_pct'], 1)}"
                    for k, v in order.items()
                )
                md.append(md_escape(f"Order effect: {txt}") + "\n")
                html.append(f"<p>Order effect: {esc(txt)}</p>")
            for line in effect_lines(c):
                md.append(md_escape(line) + "\n")
                html.append(f"<p>{esc(line)}</p>")
    if claim_settings is not None:
        from study.judge_settings import provenance_sections
        from study.sources.claim_provenance import NOTE

        part_html, part_md = provenance_sections(
            claim_settings, note=NOTE, empty="The run asserts no tier-2 claim (no claim writer)."
        )
        html.extend(part_html)
        md.extend(["", *part_md])
    md_path = out_dir / "report.md"
    md_path.write_text("\n".join(md) + "\n", encoding="utf-8")
    html_path = out_dir / "report.html"
    html_path.write_text(
        f'<!doctype html><html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        + "".join(html)
        + "</body></html>\n",
        encoding="utf-8",
    )
    return SourcesReportFiles(markdown=md_path, html=html_path, figures=figures)
