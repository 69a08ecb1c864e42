"""Judge settings as provenance: collect them per judge, print them, refuse to pool a mix.

Every judge and labeler verdict is stored with the settings of the request that produced it
(:func:`study.strict_json.judge_settings`: model, prompt version and hash, sampling, seed).
One statistic must not pool verdicts one judge gave under different settings (a changed
prompt or temperature is another judge), so every report that uses a judge collects the
distinct settings per judge with :func:`collect_settings`, stops in one sentence with
:func:`refuse_mixed_settings` when a judge's verdicts mix them, and prints
:func:`settings_lines` in its provenance. One mechanism for every instrument.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "SettingsByJudge",
    "collect_settings",
    "provenance_sections",
    "refuse_mixed_settings",
    "settings_lines",
    "settings_text",
]

#: Per judge, the distinct settings its verdicts were given under (``None``: verdicts
#: stored before settings were recorded), first seen first.
SettingsByJudge = dict[str, list[dict[str, Any] | None]]


def collect_settings(
    pairs: Iterable[tuple[str, dict[str, Any] | None]], into: SettingsByJudge | None = None
) -> SettingsByJudge:
    """Group ``(judge, settings)`` pairs into the distinct settings of each judge.

    Args:
        pairs: One pair per stored verdict (or per distinct setting).
        into: A mapping to add to (e.g. the settings of another run); a new one if ``None``.

    Returns:
        ``into`` (or the new mapping) with every judge's settings added once.
    """
    out: SettingsByJudge = {} if into is None else into
    for judge, settings in pairs:
        seen = out.setdefault(judge, [])
        if settings not in seen:
            seen.append(settings)
    return out


def settings_text(settings: dict[str, Any] | None) -> str:
    """One line of a judge's settings (the model is said by the row's judge column)."""
    if settings is None:
        return "settings not recorded"
    return ", ".join(f"{k} {settings[k]}" for k in sorted(settings) if k != "model")


def refuse_mixed_settings(by_judge: SettingsByJudge, *, what: str) -> None:
    """Raise when one judge's verdicts were given under different settings.

    Args:
        by_judge: From :func:`collect_settings`.
        what: What the verdicts belong to, for the sentence (``"run(s) a, b"``).

    Raises:
        InputError: one sentence naming the judge and two of its settings.
    """
    from storage.errors import InputError

    for judge, seen in sorted(by_judge.items()):
        if len(seen) > 1:
            raise InputError(
                f"The verdicts of {judge} in {what} mix judge settings ({settings_text(seen[0])}"
                f" / {settings_text(seen[1])}), so they are not pooled; judge them again "
                "under one setting or keep the judgements apart under another judge name."
            )


def settings_lines(by_judge: SettingsByJudge) -> list[list[str]]:
    """``[judge, settings]`` rows for a report's provenance, judges in name order."""
    return [[j, settings_text(seen[0])] for j, seen in sorted(by_judge.items()) if seen]


#: The provenance table's columns: ``(column, header, render)`` of ``study.report.html``.
PROVENANCE_COLUMNS: tuple[tuple[str, str, None], ...] = (
    ("judge", "judge", None),
    ("settings", "prompt, sampling and seed", None),
)


def provenance_sections(
    rows: Sequence[tuple[str, str]],
    *,
    note: str,
    empty: str,
    columns: Sequence[tuple[str, str, None]] = PROVENANCE_COLUMNS,
) -> tuple[list[str], list[str]]:
    """A report's "Judge settings (provenance)" section as HTML parts and Markdown parts.

    Args:
        rows: ``(judge, settings)`` rows (:func:`settings_lines`).
        note: The line under the heading (what the settings cover).
        empty: The line shown instead of a table when there are no rows.
        columns: The table's columns (judge, settings) and their headers.
    """
    import pandas as pd

    from study.report.html import esc, table
    from study.report.markdown import md_escape, md_table

    title = "Judge settings (provenance)"
    if not rows:
        return [f"<h2>{title}</h2>", f"<p>{esc(empty)}</p>"], [f"## {title}\n", empty + "\n"]
    frame = pd.DataFrame(list(rows), columns=["judge", "settings"])
    html = [
        f"<h2>{title}</h2>",
        f'<p class="muted">{esc(note)}</p>',
        table(frame, list(columns), text=("judge", "settings")),
    ]
    return html, [f"## {title}\n", md_escape(note) + "\n", md_table(frame, list(columns))]
