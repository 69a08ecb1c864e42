"""A model's control characters stay visible text in the HTML kit and a CSV download, while
the JSONL download keeps the text exact (study/report/html.py, study/downloads.py)."""

from __future__ import annotations

import json
import re

import pandas as pd

from study.downloads import frame_bytes
from study.report.html import esc
from tests.hostile_text import HOSTILE

_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_esc_writes_control_characters_out_and_keeps_line_breaks() -> None:
    shown = esc(HOSTILE + "\nnext")
    assert not _RAW.search(shown)
    assert "\\x1b[31m" in shown and "\\u202e" in shown and "\nnext" in shown
    assert "&lt;script&gt;" in shown


def test_a_csv_download_shows_escapes_as_text_and_jsonl_keeps_them() -> None:
    frame = pd.DataFrame({"answer": ["=" + HOSTILE, "plain"], "n": [1, 2]})
    csv = frame_bytes(frame, "csv").decode()
    assert not _RAW.search(csv.replace("\t", ""))
    assert "'=" in csv and "\\x1b[31m" in csv  # formula guarded, escape visible
    first = json.loads(frame_bytes(frame, "jsonl").decode().splitlines()[0])
    assert first["answer"] == "=" + HOSTILE and first["n"] == 1
