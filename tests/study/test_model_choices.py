"""The models a set-up form offers and how a typed model is checked before a job starts."""

from __future__ import annotations

import pandas as pd
import pytest

from storage.errors import ConfigError, InputError
from study.downloads import frame_bytes
from study.model_choices import check_model, configured_endpoints

PRESETS = {"sim/src-paper": "the published averages"}


def test_endpoints_come_from_variable_names_only() -> None:
    env = {
        "VLLM_BASE_URL": "http://127.0.0.1:8000/v1",
        "MY_LAB_BASE_URL": "http://x/v1",
        "EMPTY_BASE_URL": " ",
        "OPENAI_BASE_URL": "http://o/v1",
        "VLLM_API_KEY": "secret",
    }
    eps = configured_endpoints(env)
    assert [e.name for e in eps] == ["simulator", "my-lab", "vllm"]
    assert [e.prefix for e in eps][1:] == ["openai-api/my-lab/", "openai-api/vllm/"]
    assert not any("secret" in e.note or "127.0.0.1" in e.note for e in eps)
    assert "openai" in [e.name for e in configured_endpoints({"OPENAI_API_KEY": "k"})]


def test_check_model_refuses_what_a_job_could_not_reach() -> None:
    assert str(check_model(" sim/src-paper", env={}, presets=PRESETS)) == "sim/src-paper"
    with pytest.raises(InputError, match="Unknown simulator model 'sim/src-nope'"):
        check_model("sim/src-nope", env={}, presets=PRESETS)
    with pytest.raises(ConfigError, match="needs VLLM_BASE_URL"):
        check_model("openai-api/vllm/qwen", env={}, presets=PRESETS)
    env = {"VLLM_BASE_URL": "http://127.0.0.1:8000/v1", "VLLM_API_KEY": "k"}
    assert (
        str(check_model("openai-api/vllm/qwen", env=env, presets=PRESETS)) == "openai-api/vllm/qwen"
    )
    with pytest.raises(ConfigError, match="not served over an API"):
        check_model("vllm/some/path", env=env, presets=PRESETS)


def test_table_downloads_guard_csv_formulas_only() -> None:
    frame = pd.DataFrame({"answer": ["=HYPERLINK(1)", "fine"], "n": [-1, 2]})
    assert frame_bytes(frame, "csv").decode().splitlines()[1] == "'=HYPERLINK(1),-1"
    assert b'"=HYPERLINK(1)"' in frame_bytes(frame, "jsonl")
    with pytest.raises(ValueError, match="unknown table format"):
        frame_bytes(frame, "xlsx")
