"""The toy report: Markdown and HTML through the report kit, the answers as a CSV download.

Every answer is untrusted model output: Markdown cells go through ``md_table`` (escaped),
HTML through ``esc``, the CSV through the formula guard with control characters shown
visibly (``escape_control``), so nothing of an answer acts in a reader, a browser, a
spreadsheet or a terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from sqlmodel import Session

from storage.repo.instrument_runs import read_records, require_instrument_run
from storage.safe_text import escape_control
from study.report.html import esc
from study.report.markdown import md_table
from study.safe_csv import write_frame_csv
from tests.toy_instrument.analysis import CoinResult, analyse
from tests.toy_instrument.store import INSTRUMENT

_SUMMARY = [("model", "model", None), ("n", "answers", None), ("share", "share yes", None),
            ("low", "95% low", None), ("high", "95% high", None)]  # fmt: skip


def _summary_row(model: str, result: CoinResult) -> dict[str, object]:
    return {"model": model, "n": result.n, "share": result.share, "low": result.ci_low,
            "high": result.ci_high}  # fmt: skip


def render(model: str, result: CoinResult) -> str:
    """One result's Markdown (the ``driftlens toy run --report`` file)."""
    return "# Coin (toy)\n\n" + md_table(pd.DataFrame([_summary_row(model, result)]), _SUMMARY)


def write_report(runs: Sequence[str], out: Path, *, session: Session) -> Path:
    """Write ``report.md``, ``report.html`` and ``answers.csv`` of stored runs under ``out``.

    Returns:
        The HTML report's path.

    Raises:
        NotFoundError: a run is not stored.
    """
    out.mkdir(parents=True, exist_ok=True)
    summary, answers = [], []
    for name in runs:
        row = require_instrument_run(INSTRUMENT, name, session=session)
        assert row.id is not None
        records = read_records(row.id, session=session)
        res = analyse([None if r.value is None else int(r.value) for r in records])
        summary.append({"run": name, **_summary_row(row.model, res)})
        answers += [{"run": name, "item": r.item, "sample": r.unit, "answer": r.text or "",
                     "yes": r.value} for r in records]  # fmt: skip
    table = pd.DataFrame(summary)
    answer_table = pd.DataFrame(answers, columns=["run", "item", "sample", "answer", "yes"])
    cols = [("run", "run", None), *_SUMMARY]
    md = "# Coin (toy)\n\n" + md_table(table, cols) + "\n## Answers\n\n"
    md += md_table(answer_table, [(c, c, None) for c in answer_table.columns])
    (out / "report.md").write_text(md, encoding="utf-8")
    head = "".join(f"<th>{esc(h)}</th>" for _, h, _ in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(r[c])}</td>" for c, _, _ in cols) + "</tr>" for r in summary
    )
    rows = "".join(
        f"<tr><td>{esc(a['run'])}</td><td>{esc(a['item'])}</td>"
        f"<td>{esc(escape_control(str(a['answer'])))}</td></tr>"
        for a in answers
    )
    html = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Coin (toy)</title></head>"
        f"<body><h1>Coin (toy)</h1><table><tr>{head}</tr>{body}</table><h2>Answers</h2>"
        f"<table><tr><th>run</th><th>item</th><th>answer</th></tr>{rows}</table></body></html>"
    )
    (out / "report.html").write_text(html, encoding="utf-8")
    visible = answer_table.assign(answer=answer_table["answer"].map(escape_control))
    write_frame_csv(visible, out / "answers.csv")
    return out / "report.html"
