"""Printing a run's stored answers (:mod:`study.transcripts`) on the terminal, for the
instruments' ``show`` commands.

Every piece of model text (steps, answer, a judge's reason) and imported text (question,
memory line) goes through the CLI's :class:`~app.cli.console.SafeConsole` with markup off:
a control character or escape sequence in it is written out, never sent to the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.cli.console import SafeConsole
from study.transcripts import Transcript


def _score(value: float | None) -> str:
    return "unscored" if value is None else f"{value:g}"


def print_transcripts(
    console: SafeConsole, run: str, shown: Sequence[Transcript], total: int
) -> None:
    """Print each answer: its key, question, memory line, steps, answer and verdicts."""
    console.print(f"Run {run}: {len(shown)} of {total} responses.", markup=False)
    for t in shown:
        lines = [
            "",
            f"{t.question_id} · {t.condition} · sample {t.sample} · {t.parse_status}",
            f"  question: {t.question}",
        ]
        if t.memory:
            lines.append(f"  memory: {t.memory}")
        lines += [f"  step {i}: {step}" for i, step in enumerate(t.steps, start=1)]
        if t.answer is not None:
            lines.append(f"  answer: {t.answer}")
        elif t.text:  # no answer parsed: the reply as it came
            lines.append(f"  reply: {t.text}")
        for v in t.verdicts:
            scores = ", ".join(f"{kind} {_score(value)}" for kind, value in v.scores)
            lines.append(f"  judge {v.judge}: {scores}" + (f" ({v.reason})" if v.reason else ""))
        for line in lines:
            console.print(line, markup=False, soft_wrap=True)
