"""A set-up input that is either the instrument's shipped sample or a file the user uploads."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

#: The radio choice that shows the file uploader.
UPLOAD_CHOICE = "upload a file"


def sample_or_upload(
    label: str,
    sample: str,
    *,
    file_label: str,
    suffixes: Sequence[str],
    radio_key: str,
    upload_key: str,
) -> UploadedFile | None:
    """A horizontal radio between the shipped sample and an upload, with the uploader
    shown only when the upload is chosen.

    Args:
        label: The radio's label ("Items", "Batteries").
        sample: The radio's first choice, naming the shipped sample.
        file_label: The uploader's label (which formats, read as which command reads them).
        suffixes: The file endings the uploader accepts (``.csv``; the reader's own list).
        radio_key: The radio's widget key.
        upload_key: The uploader's widget key.

    Returns:
        The uploaded file; ``None`` for the sample or while nothing is uploaded.
    """
    source = st.radio(label, [sample, UPLOAD_CHOICE], key=radio_key, horizontal=True)
    if source != UPLOAD_CHOICE:
        return None
    return st.file_uploader(file_label, type=list(suffixes), key=upload_key)
