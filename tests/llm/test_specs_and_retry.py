"""Model specs, environment resolution, seeds and the retry arithmetic."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from llm.backends import get_backend
from llm.retry import RetryPolicy, backoff_delay, parse_retry_after
from llm.seeds import derive_seed, stable_int
from llm.specs import ModelSpec, clean_url, parse_spec, resolve_endpoint
from storage.errors import ConfigError


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "openai/gpt-4o-mini",
            ModelSpec("openai/gpt-4o-mini", "openai", None, "gpt-4o-mini", False),
        ),
        (
            "openai-api/my-vllm/Qwen/Qwen3-4B",
            ModelSpec(
                "openai-api/my-vllm/Qwen/Qwen3-4B", "openai-api", "my-vllm", "Qwen/Qwen3-4B", False
            ),
        ),
        (
            "vllm/Qwen/Qwen3-4B",
            ModelSpec("vllm/Qwen/Qwen3-4B", "vllm", None, "Qwen/Qwen3-4B", False),
        ),
        (
            "vllm//models/local",
            ModelSpec("vllm//models/local", "vllm", None, "/models/local", False),
        ),
        ("sim/default", ModelSpec("sim/default", "sim", None, "default", True)),
        ("  SIM/null ", ModelSpec("sim/null", "sim", None, "null", True)),
    ],
)
def test_parse_spec(spec: str, expected: ModelSpec) -> None:
    assert parse_spec(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "Empty model spec"),
        ("gpt-4o", "names no model"),
        ("openai/", "names no model"),
        ("anthropic/claude", "Unknown provider 'anthropic'"),
        ("openai-api/vllm", "needs a service and a model"),
        ("openai-api/my.vllm/m", "Service name 'my.vllm'"),
        ("sim/a/b", "a simulator preset is one word"),
    ],
)
def test_malformed_specs_are_one_line_config_errors(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        parse_spec(spec)
    assert "\n" not in str(err.value)


def test_openai_api_env_names_are_derived_from_the_service() -> None:
    info = parse_spec("openai-api/my-vllm/m")
    env = {"MY_VLLM_BASE_URL": "http://127.0.0.1:8000/v1/", "MY_VLLM_API_KEY": "sekrit-1"}
    ep = resolve_endpoint(info, env)
    assert ep.base_url == "http://127.0.0.1:8000/v1" and ep.api_key == "sekrit-1"
    assert "sekrit-1" not in repr(ep)


@pytest.mark.parametrize(
    ("spec", "env", "variable"),
    [
        ("openai/gpt-4o", {}, "OPENAI_API_KEY"),
        ("openai-api/my-vllm/m", {"MY_VLLM_API_KEY": "k"}, "MY_VLLM_BASE_URL"),
        ("openai-api/my-vllm/m", {"MY_VLLM_BASE_URL": "http://127.0.0.1:1/v1"}, "MY_VLLM_API_KEY"),
    ],
)
def test_missing_variables_are_named(spec: str, env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        resolve_endpoint(parse_spec(spec), env)


def test_bad_url_and_key_never_printed() -> None:
    env = {"X_BASE_URL": "127.0.0.1:8000", "X_API_KEY": "sk-very-secret"}
    with pytest.raises(ConfigError, match="X_BASE_URL must be an http") as err:
        get_backend(ModelSpec.parse("openai-api/x/m"), env=env)
    assert "sk-very-secret" not in str(err.value)


def test_openai_base_url_defaults_and_can_be_overridden() -> None:
    info = parse_spec("openai/gpt-4o")
    assert resolve_endpoint(info, {"OPENAI_API_KEY": "k"}).base_url == "https://api.openai.com/v1"
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    assert resolve_endpoint(info, env).base_url == "http://127.0.0.1:9/v1"


def test_clean_url_drops_credentials_and_query() -> None:
    assert clean_url("https://user:sk-1@host.example:8443/v1/?api_key=sk-2#x") == (
        "https://host.example:8443/v1"
    )


def test_get_backend_sim_and_unknown_preset() -> None:
    assert get_backend(ModelSpec.parse("sim/default")).simulated
    with pytest.raises(ConfigError, match="Unknown simulator preset 'nope'"):
        get_backend(ModelSpec.parse("sim/nope"))


def test_parse_retry_after_seconds_and_dates() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert (
        parse_retry_after(format_datetime(now + timedelta(seconds=7), usegmt=True), now=now) == 7.0
    )
    assert (
        parse_retry_after(format_datetime(now - timedelta(seconds=7), usegmt=True), now=now) == 0.0
    )
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_backoff_is_full_jitter_under_the_cap_and_at_least_retry_after() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=4.0)
    rng = random.Random(1)
    delays = [backoff_delay(a, policy, rng) for a in range(1, 10) for _ in range(50)]
    assert all(0.0 <= d <= 4.0 for d in delays)
    assert max(delays) > 2.0  # the cap grows with the attempt number
    assert backoff_delay(1, policy, rng, retry_after=9.0) == 9.0


def test_seeds_are_stable_and_distinct_per_sample() -> None:
    assert stable_int("a", 1) == stable_int("a", 1) != stable_int("a", 2)
    assert derive_seed(None, 3) is None
    assert derive_seed(42, 0) == 42
    assert len({derive_seed(42, k) for k in range(100)}) == 100
    assert derive_seed(1, 1) != derive_seed(2, 0)


def test_model_spec_says_what_a_spec_is_without_prefix_tests_elsewhere() -> None:
    from llm.specs import (
        ModelSpec,
        is_simulator_model_id,
        preset_name,
        simulator_spec,
        spec_simulated,
    )

    here = ModelSpec.parse("sim/mc-balanced")
    served = ModelSpec.parse("openai-api/simulator/sim/mc-balanced")
    real = ModelSpec.parse("openai-api/vllm/Qwen/Qwen3-4B")
    engine = ModelSpec.parse("vllm/Qwen/Qwen3-4B")
    assert ModelSpec.parse(here) is here and str(here) == "sim/mc-balanced"
    assert (here.simulated, here.simulator_output, here.simulator_preset) == (
        True, True, "mc-balanced",
    )  # fmt: skip
    # a served simulator answers with simulated text over a real HTTP client
    assert (served.simulated, served.simulator_output, served.over_http) == (False, True, True)
    assert served.simulator_preset == "mc-balanced"
    # a served model whose id merely contains "sim" is not the simulator
    assert not ModelSpec.parse("openai-api/vllm/simple/sim").simulator_output
    assert (real.simulator_output, real.in_process_engine, real.simulator_preset) == (
        False, False, None,
    )  # fmt: skip
    assert engine.in_process_engine and not engine.over_http
    assert preset_name("sim/default") == preset_name(" default ") == "default"
    assert simulator_spec("disp-base-d0") == simulator_spec("sim/disp-base-d0")
    assert is_simulator_model_id("sim/default") and not is_simulator_model_id("Qwen/Qwen3-4B")
    assert not is_simulator_model_id(None)
    assert spec_simulated("openai-api/simulator/sim/default")
    assert not spec_simulated("not a spec")
