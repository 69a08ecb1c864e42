"""Download buttons of an instrument's results: a table as JSONL / CSV / Parquet, a folder.

Each button builds its file only when clicked (``data`` is a callable), so a page with
many downloads renders without writing any. CSV cells are formula-safe
(:func:`study.downloads.frame_bytes` goes through ``study.safe_csv``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

from study.downloads import TABLE_FORMATS, folder_zip, frame_bytes


def _table(make: Callable[[], pd.DataFrame], fmt: str) -> bytes:
    return frame_bytes(make(), fmt)


def table_downloads(
    label: str, make: Callable[[], pd.DataFrame], *, file_stem: str, key: str
) -> None:
    """One button per format for the table ``make()`` returns.

    Args:
        label: What the table is ("Answers", "Probes").
        make: Builds the table (called once per click).
        file_stem: The downloaded file's name without its extension.
        key: Widget key prefix (unique on the page).
    """
    cols = st.columns(len(TABLE_FORMATS))
    for col, (fmt, mime) in zip(cols, TABLE_FORMATS.items(), strict=True):
        col.download_button(
            f"{label} (.{fmt})",
            data=partial(_table, make, fmt),
            file_name=f"{file_stem}.{fmt}",
            mime=mime,
            key=f"{key}-{fmt}",
            on_click="ignore",  # a download needs no rerun of the page
        )


def folder_download(label: str, folder: Path, *, file_name: str, key: str) -> None:
    """A button that downloads ``folder`` as one zip."""
    st.download_button(
        label,
        data=lambda: folder_zip(folder),
        file_name=file_name,
        mime="application/zip",
        key=key,
        on_click="ignore",  # a download needs no rerun of the page
    )


def stats_download(data: bytes | str, *, file_stem: str, key: str) -> None:
    """The ``Statistics (.json)`` button of an instrument's report (``<file_stem>-stats.json``).

    Args:
        data: The statistics document, already serialised.
        file_stem: The report folder's name, which the file's name starts with.
        key: Widget key (unique on the page).
    """
    st.download_button(
        "Statistics (.json)",
        data=data,
        file_name=f"{file_stem}-stats.json",
        mime="application/json",
        key=key,
        on_click="ignore",  # a download needs no rerun of the page
    )
