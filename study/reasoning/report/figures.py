"""The drift report's figures (drawn with :mod:`study.report.figures`, saved as SVG and PNG).

* ``forest`` — d_rel with its 95% cluster-bootstrap CI per condition and metric, one panel
  per model, the noise floor at 0, points coloured by condition class;
* ``tiers`` — mean drift per condition class (the tiers) per metric, each condition's mean
  as a dot, one panel per model;
* ``agreement`` — DTW against SRI condition means, one panel per model, with Spearman ρ and
  Pearson r.

Every number plotted comes from :class:`~study.reasoning.report.tables.ReportTables`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from study.reasoning.report.data import CLASS_COLORS, CLASS_LABELS, CLASS_ORDER
from study.reasoning.report.tables import ReportTables
from study.report.figures import new_figure, plain_label, save_figure

_MARKERS = ("o", "s", "D", "^", "v")


def _class_rank(klass: str) -> int:
    return CLASS_ORDER.index(klass) if klass in CLASS_ORDER else len(CLASS_ORDER)


def _short(klass: str) -> str:
    """Class label without its parenthetical, to keep legends narrow."""
    return CLASS_LABELS.get(klass, klass).split(" (")[0]


def _legend_handles(classes: list[str], metrics: list[str]) -> list[Line2D]:
    handles = [
        Line2D(
            [],
            [],
            color=CLASS_COLORS.get(k, "#333333"),
            marker="o",
            linestyle="",
            label=_short(k),
        )
        for k in classes
    ]
    handles += [
        Line2D(
            [],
            [],
            color="#333333",
            marker=_MARKERS[i % len(_MARKERS)],
            linestyle="",
            label=plain_label(m),
        )
        for i, m in enumerate(metrics)
    ]
    return handles


def forest_plot(conditions: pd.DataFrame) -> Figure:
    """d_rel ± 95% CI per condition × metric, one panel per model, noise floor at 0.

    Args:
        conditions: the ``conditions`` report table.
    """
    models = list(dict.fromkeys(conditions["model"])) or ["(no data)"]
    metrics = list(dict.fromkeys(conditions["metric"]))
    n_rows = max((conditions["model"] == m).sum() // max(len(metrics), 1) for m in models)
    fig = new_figure(6.5 * len(models), 1.6 + 0.32 * max(int(n_rows), 1))
    axes = fig.subplots(1, len(models), squeeze=False)[0]
    for ax, model in zip(axes, models, strict=True):
        # "class" is not a valid namedtuple field, so iterate over a renamed copy
        sub = conditions[conditions["model"] == model].rename(columns={"class": "klass"})
        first = sub[sub["metric"] == metrics[0]] if metrics else sub
        order = sorted(
            first.itertuples(index=False),
            key=lambda r: (-_class_rank(str(r.klass)), _nan_low(r.d_rel)),
        )
        names = [str(r.condition) for r in order]
        y_of = {name: i for i, name in enumerate(names)}
        offsets = np.linspace(-0.18, 0.18, len(metrics)) if len(metrics) > 1 else [0.0]
        for k, metric in enumerate(metrics):
            rows = sub[sub["metric"] == metric]
            for r in rows.itertuples(index=False):
                y = y_of[str(r.condition)] + offsets[k]
                colour = CLASS_COLORS.get(str(r.klass), "#333333")
                if math.isfinite(r.ci_low) and math.isfinite(r.ci_high):
                    ax.hlines(y, r.ci_low, r.ci_high, color=colour, linewidth=1.4)
                if math.isfinite(r.d_rel):
                    ax.plot(
                        r.d_rel,
                        y,
                        marker=_MARKERS[k % len(_MARKERS)],
                        color=colour,
                        markersize=5,
                        markerfacecolor=colour if r.significant else "white",
                    )
        ax.axvline(0.0, color="#444444", linestyle="--", linewidth=1)
        ax.set_yticks(range(len(names)), [plain_label(n) for n in names])
        ax.set_ylim(-0.7, len(names) - 0.3)
        ax.set_xlabel("d_rel = (mean − noise mean) / noise sd   (dashed: noise floor)")
        ax.set_title(plain_label(model, 80))
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    classes = sorted(set(conditions["class"].astype(str)), key=_class_rank)
    fig.legend(
        handles=_legend_handles(classes, metrics),
        loc="outside lower center",
        ncols=min(len(classes) + len(metrics), 3 * len(models)),
        frameon=False,
    )
    fig.suptitle("Drift effect by condition (filled: BH-adjusted p < 0.05)")
    return fig


def _nan_low(x: float) -> float:
    return x if math.isfinite(x) else -math.inf


def tier_plot(tiers: pd.DataFrame, conditions: pd.DataFrame) -> Figure:
    """Mean drift per condition class and metric; each condition's mean as a dot.

    Args:
        tiers: the ``tiers`` report table.
        conditions: the ``conditions`` report table.
    """
    models = list(dict.fromkeys(tiers["model"])) or ["(no data)"]
    metrics = list(dict.fromkeys(tiers["metric"]))
    fig = new_figure(4.8 * len(models), 3.8)
    axes = fig.subplots(1, len(models), squeeze=False)[0]
    width = 0.8 / max(len(metrics), 1)
    for ax, model in zip(axes, models, strict=True):
        sub = tiers[tiers["model"] == model]
        classes = sorted(set(sub["class"].astype(str)), key=_class_rank)
        for k, metric in enumerate(metrics):
            rows = sub[sub["metric"] == metric].set_index("class")
            xs = np.arange(len(classes)) + (k - (len(metrics) - 1) / 2) * width
            heights = [float(rows["mean_drift"].get(c, np.nan)) for c in classes]
            ax.bar(
                xs,
                heights,
                width=width * 0.92,
                color=[CLASS_COLORS.get(c, "#333333") for c in classes],
                alpha=0.55 + 0.35 * (k == 0),
                edgecolor="#333333",
                linewidth=0.6,
                hatch=None if k == 0 else "//",
            )
            pts = conditions[(conditions["model"] == model) & (conditions["metric"] == metric)]
            for i, c in enumerate(classes):
                vals = pts.loc[pts["class"] == c, "mean"].to_numpy(dtype=float)
                # deterministic spread so dots of one class do not sit on top of each other
                jitter = np.linspace(-width * 0.3, width * 0.3, vals.size) if vals.size > 1 else [0]
                ax.plot(
                    xs[i] + np.asarray(jitter),
                    vals,
                    linestyle="",
                    marker=".",
                    color="#222222",
                    markersize=4,
                )
        ax.set_xticks(
            range(len(classes)),
            [_short(c) for c in classes],
            rotation=15,
        )
        ax.set_ylabel("mean drift (bars: class, dots: conditions)")
        ax.set_title(plain_label(model, 60))
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    if len(metrics) > 1:
        handles = [
            Patch(
                facecolor="#bbbbbb",
                edgecolor="#333333",
                hatch=None if k == 0 else "//",
                label=plain_label(m),
            )
            for k, m in enumerate(metrics)
        ]
        fig.legend(handles=handles, loc="outside lower center", ncols=len(metrics), frameon=False)
    fig.suptitle("Drift tiers: noise < attributes < life events expected")
    return fig


def agreement_plot(condition_means: pd.DataFrame, agreement: pd.DataFrame) -> Figure:
    """Scatter of the first two metrics' condition means (DTW against SRI), per model.

    Args:
        condition_means: the ``condition_means`` report table.
        agreement: the ``agreement`` report table.
    """
    models = list(dict.fromkeys(condition_means["model"])) or ["(no data)"]
    metric_cols = [c for c in condition_means.columns if c not in ("model", "condition", "class")]
    fig = new_figure(4.2 * len(models), 4.0)
    axes = fig.subplots(1, len(models), squeeze=False)[0]
    for ax, model in zip(axes, models, strict=True):
        if len(metric_cols) < 2:
            ax.text(0.5, 0.5, "needs two metrics", ha="center", va="center")
            ax.set_axis_off()
            continue
        a, b = metric_cols[:2]
        sub = condition_means[condition_means["model"] == model]
        for klass, g in sub.groupby("class", sort=False):
            ax.scatter(
                g[a],
                g[b],
                color=CLASS_COLORS.get(str(klass), "#333333"),
                s=22,
                label=_short(str(klass)),
            )
        row = agreement[(agreement["model"] == model)]
        if len(row):
            rho, r = float(row["spearman"].iloc[0]), float(row["pearson"].iloc[0])
            ax.set_title(f"{plain_label(model, 40)}\nSpearman ρ {rho:.3f}, Pearson r {r:.3f}")
        else:
            ax.set_title(plain_label(model, 40))
        ax.set_xlabel(f"mean {plain_label(a)}")
        ax.set_ylabel(f"mean {plain_label(b)}")
        ax.grid(color="#eeeeee", linewidth=0.6)
        ax.legend(fontsize=7, frameon=False)
    fig.suptitle("Agreement of the metrics across conditions")
    return fig


def write_figures(tables: ReportTables, folder: Path) -> dict[str, list[Path]]:
    """Draw every figure and save it as ``NAME.svg`` and ``NAME.png`` in ``folder``.

    Returns:
        Figure name → ``[svg, png]`` paths.
    """
    figures = {
        "forest": forest_plot(tables.conditions),
        "tiers": tier_plot(tables.tiers, tables.conditions),
        "agreement": agreement_plot(tables.condition_means, tables.agreement),
    }
    return {name: save_figure(fig, folder / name) for name, fig in figures.items()}
