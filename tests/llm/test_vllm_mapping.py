"""vLLM parameter mapping (pure; runs everywhere) and the missing-vLLM message."""

from __future__ import annotations

import importlib.util

import pytest

from llm.types import SamplingParams
from llm.vllm_backend import check_vllm_available, vllm_sampling_kwargs
from storage.errors import ConfigError


def test_vllm_param_mapping_without_vllm_installed() -> None:
    sp = SamplingParams(seed=7)
    kw0 = vllm_sampling_kwargs(sp, 0)
    assert kw0 == {
        "n": 1,
        "temperature": 0.7,
        "top_p": 0.98,
        "max_tokens": 2048,
        "top_k": 50,
        "repetition_penalty": 1.0,
        "seed": 7,
    }
    kw1 = vllm_sampling_kwargs(sp, 1)
    assert kw1["seed"] != 7 and kw1 == vllm_sampling_kwargs(sp, 1)
    bare = vllm_sampling_kwargs(SamplingParams(top_k=None, repetition_penalty=None), 3)
    assert "top_k" not in bare and "repetition_penalty" not in bare and "seed" not in bare


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_vllm_spec_without_vllm_is_a_clear_config_error() -> None:
    from llm.backends import get_backend

    with pytest.raises(ConfigError, match="optional vLLM extra"):
        check_vllm_available()
    with pytest.raises(ConfigError, match="openai-api/<service>/<model>"):
        get_backend("vllm/Qwen/Qwen3-4B")
