"""The model box of an instrument's set-up form: an endpoint, then a preset or a model name.

The endpoints are the simulator and every service configured in the app's environment
(:func:`study.model_choices.configured_endpoints`); a simulator model is picked from the
instrument's presets, a served one is typed (the name the server knows it by). What comes
back is a spec string; the form checks it with :func:`study.model_choices.check_model`
before it submits a job, so an unreachable model is refused in one line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import streamlit as st

from study.model_choices import SIMULATOR, configured_endpoints


def model_picker(
    label: str, presets: Mapping[str, str], *, key: str, default: str | None = None
) -> str:
    """Draw the endpoint and model widgets; return the model spec they name.

    Args:
        label: What the model is for ("Response model", "Judge").
        presets: This instrument's simulator models (``sim/...`` → description).
        key: Widget key prefix (unique on the page).
        default: The preset shown first.
    """
    endpoints = {e.name: e for e in configured_endpoints(os.environ)}
    left, right = st.columns([1, 2])
    name = left.selectbox(
        f"{label}: endpoint",
        list(endpoints),
        format_func=lambda n: f"{n} — {endpoints[n].note}",
        key=f"{key}-endpoint",
    )
    endpoint = endpoints[str(name)]
    if endpoint.name == SIMULATOR:
        names = list(presets)
        index = names.index(default) if default in names else 0
        return str(
            right.selectbox(
                label,
                names,
                index=index,
                format_func=lambda s: f"{s} — {presets[s]}",
                key=f"{key}-preset",
            )
        )
    model = right.text_input(
        f"{label}: model name on {endpoint.name}",
        key=f"{key}-model-{endpoint.name}",
        placeholder="e.g. Qwen/Qwen3-8B",
    )
    return f"{endpoint.prefix}{model.strip()}"
