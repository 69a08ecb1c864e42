"""Settings: where the workbench keeps its data and which model endpoints it can reach.

Keys are read from the environment only; this page shows whether a key is set, never
its value, and stores nothing.
"""

from __future__ import annotations

import os

import pandas as pd
import streamlit as st

import driftlens_core
from app.ui.db import page_settings
from storage.safe_text import redact_url
from storage.settings import redacted_url

st.title("Settings")
conf = page_settings()
st.subheader("Workspace")
st.text(f"Folder: {conf.workspace}")
st.text(f"Database: {redacted_url(conf.db_url)}")
st.text(f"Core implementation: {driftlens_core.implementation()}")

st.subheader("Model endpoints")
st.caption(
    "Models are named provider/model: openai/<model> (OPENAI_API_KEY), "
    "openai-api/<service>/<model> (<SERVICE>_BASE_URL and <SERVICE>_API_KEY), "
    "vllm/<path> (in-process, GPU), sim/<preset> (built-in simulator). "
    "Set the variables in the environment that starts `driftlens app`."
)
rows = [
    {
        "service": "openai",
        "base URL": redact_url(os.environ.get("OPENAI_BASE_URL", "(default)")),
        "key set": bool(os.environ.get("OPENAI_API_KEY")),
    }
]
for name, value in sorted(os.environ.items()):
    if name.endswith("_BASE_URL") and name != "OPENAI_BASE_URL":
        service = name[: -len("_BASE_URL")]
        rows.append(
            {
                "service": service.lower().replace("_", "-"),
                "base URL": redact_url(value),
                "key set": bool(os.environ.get(f"{service}_API_KEY")),
            }
        )
rows.append({"service": "sim", "base URL": "(in-process simulator)", "key set": False})
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
