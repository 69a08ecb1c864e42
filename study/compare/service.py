"""Compare two or more runs of one instrument on the items they share.

:func:`compare_runs` loads every run through the instrument's adapter, matches each pair's
items (the unmatched are counted and named, never silently dropped), lets the adapter pair
them, adjusts the whole family of rows with Benjamini–Hochberg, reads each row's verdict
and, for three or more runs, ranks them with compact letters so runs that cannot be
separated share a letter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import combinations

import numpy as np
from sqlalchemy import func, select
from sqlmodel import Session

from driftlens_core.paired import family_adjust, ranking_letters
from storage.errors import InputError
from study.compare.registry import adapter_names, get_adapter
from study.compare.types import (
    CompareOptions,
    Comparison,
    ItemDiff,
    Matching,
    RankRow,
    RunData,
    StatRow,
    Verdict,
)

#: Matched runs named in a message are cut after this many items.
_NAMED = 10


def match_items(a: RunData, b: RunData) -> tuple[list[str], Matching]:
    """The items both runs answered, and those only one did."""
    ia, ib = a.items, b.items
    shared = sorted(ia & ib)
    return shared, Matching(a.name, b.name, len(shared), tuple(sorted(ia - ib)),
                            tuple(sorted(ib - ia)))  # fmt: skip


def verdict(row: StatRow, alpha: float) -> Verdict:
    """``different`` (adjusted p < α), ``equivalent`` (TOST p < α) or ``inconclusive``.

    ``no information`` first: with no informative item the interval is [0, 0] and the
    TOST passes whatever the true difference, so "equivalent" would be a wrong finding.
    """
    if row.n_informative == 0:
        return "no information"
    if not math.isfinite(row.p_adjusted):
        return "untestable"
    if row.p_adjusted < alpha:
        return "different"
    if math.isfinite(row.tost_p) and row.tost_p < alpha:
        return "equivalent"
    return "inconclusive"


def _adjust(rows: list[StatRow], alpha: float) -> list[StatRow]:
    """BH over the whole family, for the bootstrap p-values and the paired tests' apart."""
    if not rows:
        return rows
    adj = family_adjust([r.p_boot for r in rows])
    adj_t = family_adjust([r.p_test for r in rows])
    out = []
    for r, p, pt in zip(rows, adj, adj_t, strict=True):
        r2 = StatRow(**{**r.__dict__, "p_adjusted": float(p), "p_test_adjusted": float(pt)})
        out.append(StatRow(**{**r2.__dict__, "verdict": verdict(r2, alpha)}))
    return out


def _ranking(runs: Sequence[str], rows: Sequence[StatRow], alpha: float) -> list[RankRow]:
    """Compact letters per statistic and scope from the table's BH-adjusted p-values.

    One family for letters and table: the letters read each pair's ``p_adjusted`` (BH over
    every row of the comparison), not a second BH within one statistic, which disagreed
    with the table on 2 of 609 run pairs.
    """
    out: list[RankRow] = []
    index = {r: i for i, r in enumerate(runs)}
    keys = list(dict.fromkeys((r.statistic, r.scope) for r in rows))
    for statistic, scope in keys:
        part = [r for r in rows if (r.statistic, r.scope) == (statistic, scope)]
        k = len(runs)
        p = np.full((k, k), np.nan)
        vals: list[list[float]] = [[] for _ in runs]
        for r in part:
            i, j = index[r.run_a], index[r.run_b]
            p[i, j] = p[j, i] = r.p_adjusted
            vals[i].append(r.value_a)
            vals[j].append(r.value_b)
        # a run's value on each pair's shared items; their mean orders the display
        value = np.array([float(np.mean(v)) if v else math.nan for v in vals])
        rank = ranking_letters(value, p, alpha=alpha, adjusted=True)
        for i in rank.order:
            out.append(RankRow(statistic, scope, runs[i], float(value[i]), rank.letters[i]))
    return out


def compare_runs(
    runs: Sequence[str],
    *,
    instrument: str,
    session: Session,
    options: CompareOptions | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Comparison:
    """Paired comparison of two or more runs of one instrument.

    Args:
        runs: run names (two or more, distinct).
        instrument: ``reasoning``, ``disposition``, ``conflicts``, ``sources`` or any
            registered adapter.
        session: open session (read only).
        options: settings (labeler, study, margin, α, bootstrap, seed).
        progress: ``(done, total)`` after each run loaded and each pair compared.

    Raises:
        InputError: fewer than two runs, a run named twice, or two runs that share no item.
        NotFoundError: a run does not exist.
    """
    opts = options or CompareOptions()
    names = [r.strip() for r in runs if r.strip()]
    if len(names) < 2:
        raise InputError("Name at least two runs to compare.")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"Run {twice[0]!r} is named twice; name each run once.")
    from study.limits import TOP_ITEMS

    TOP_ITEMS.check(opts.top_items)
    adapter = get_adapter(instrument)
    if opts.margin is not None and math.isfinite(opts.margin) and opts.margin <= 0:
        raise InputError("The equivalence margin must be positive (or 'mdd').")
    pairs = list(combinations(names, 2))
    total = len(names) + len(pairs)
    data: dict[str, RunData] = {}
    for n in names:
        data[n] = adapter.load(n, session=session, options=opts)
        if progress is not None:
            progress(len(data), total)
    if opts.margin is None:
        margin = adapter.default_margin
    else:
        margin = None if math.isnan(opts.margin) else opts.margin
    source = "set by the user" if opts.margin is not None else f"the {adapter.name} default"
    note = (
        f"TOST at ±{margin:g} ({source})"
        if margin is not None
        else "TOST at each comparison's own MDD (80 % power, two-sided α)"
    )
    rows: list[StatRow] = []
    matchings: list[Matching] = []
    items: list[ItemDiff] = []
    for done, (na, nb) in enumerate(pairs, start=len(names) + 1):
        a, b = data[na], data[nb]
        shared, m = match_items(a, b)
        if not shared:
            raise InputError(
                f"Runs {na!r} and {nb!r} share no item; a paired comparison needs the same "
                f"items in both ({len(m.only_a)} only in {na!r}, {len(m.only_b)} only in {nb!r})."
            )
        pair_rows = adapter.pair(a, b, shared, options=opts, margin=margin)
        m = Matching(m.run_a, m.run_b, m.shared, m.only_a, m.only_b,
                     adapter.unpaired_units(a, b, shared))  # fmt: skip
        matchings.append(m)
        rows.extend(pair_rows)
        items.extend(adapter.items(a, b, shared, top=opts.top_items))
        if progress is not None:
            progress(done, total)
    adjusted = _adjust(rows, opts.alpha)
    ranking = _ranking(names, adjusted, opts.alpha) if len(names) >= 3 else []
    return Comparison(
        instrument=adapter.name,
        runs=tuple(names),
        labels={n: d.label for n, d in data.items()},
        rows=tuple(adjusted),
        matchings=tuple(matchings),
        ranking=tuple(ranking),
        items=tuple(items),
        simulated=any(d.simulated for d in data.values()),
        options=opts,
        headline=adapter.headline,
        margin_note=note,
    )


def matching_lines(comparison: Comparison) -> list[str]:
    """One sentence per pair saying how many items were shared and naming the others."""
    out = []
    for m in comparison.matchings:
        line = f"{m.run_a} vs {m.run_b}: {m.shared} shared item(s)"
        for run, only in ((m.run_a, m.only_a), (m.run_b, m.only_b)):
            if only:
                named = ", ".join(only[:_NAMED]) + (" …" if len(only) > _NAMED else "")
                line += f"; {len(only)} only in {run} ({named})"
        if m.unpaired_units:
            line += f"; {m.unpaired_units} answer(s) of shared items without a partner left out"
        out.append(line + ".")
    return out


def run_choices(instrument: str, *, session: Session) -> list[str]:
    """The runs of ``instrument`` that the Compare page offers."""
    return get_adapter(instrument).list_runs(session=session)


def parse_margin(text: str | None) -> float | None:
    """``None`` (instrument default), ``nan`` for ``mdd``, else a positive number."""
    if text is None:
        return None
    if text.strip().lower() == "mdd":
        return math.nan
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"--margin must be a positive number or 'mdd', not {text!r}.") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"--margin must be a positive number or 'mdd', not {text!r}.")
    return value


def data_revision(*, session: Session) -> tuple[object, ...]:
    """A cheap token that changes when what any adapter compares changes.

    Per table an adapter reads (its ``revision_tables``): the largest id (a new row) and the
    row count (a deleted one), plus the newest run update (a run's status). A page keys its
    cached comparison by the inputs and this token, so new data never shows a stale result.
    """
    from storage.generation_models import GenerationRun

    tables = dict.fromkeys(t for name in adapter_names() for t in get_adapter(name).revision_tables)
    out: list[object] = []
    for model in tables:
        table = model.__table__  # type: ignore[attr-defined]
        n, top = session.execute(
            select(func.count(), func.coalesce(func.max(table.c.id), 0)).select_from(table)
        ).one()
        out += [int(n), int(top)]
    newest = session.execute(select(func.max(GenerationRun.updated_at))).scalar_one()
    out.append(None if newest is None else str(newest))
    return tuple(out)
