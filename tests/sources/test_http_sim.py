"""The ``src-*`` simulator over real HTTP through the real ``openai`` client: same answers,
same letters and distributions as in-process (the wire format of logprobs included)."""

from __future__ import annotations

import os
import secrets

import pytest

from llm.backends import get_backend
from llm.specs import ModelSpec
from study.sources.items import shipped_items
from study.sources.plan import SourcesConfig, run_sources
from study.sources.sim.wiring import backend_for, serve_source_sim


def test_http_run_equals_the_in_process_run() -> None:
    items = shipped_items()[::9]
    key = secrets.token_urlsafe(12)
    cfg = SourcesConfig(variants=("bare", "u+", "d-", "u-d+", "d+u-"))
    local = run_sources(items, backend_for(ModelSpec.parse("sim/src-paper"), items), config=cfg)
    with serve_source_sim(items, api_key=key) as url:
        env = {**os.environ, "SRCSIM_BASE_URL": url, "SRCSIM_API_KEY": key}
        backend = get_backend(ModelSpec.parse("openai-api/srcsim/sim/src-paper"), env=env)
        remote = run_sources(items, backend, config=cfg, concurrency=4)
    assert remote.n_errors == 0
    for a, b in zip(local.records, remote.records, strict=True):
        assert (a.variant, a.reading.letter, a.wrong_letter) == (
            b.variant, b.reading.letter, b.wrong_letter,
        )  # fmt: skip
        assert b.reading.method == "logprobs"
        assert a.reading.probs is not None and b.reading.probs is not None
        for k, p in a.reading.probs.items():
            assert b.reading.probs[k] == pytest.approx(p, rel=1e-9, abs=1e-12)


def test_wrong_key_is_refused() -> None:
    items = shipped_items()[:2]
    with serve_source_sim(items, api_key="right") as url:
        env = {**os.environ, "SRCSIM_BASE_URL": url, "SRCSIM_API_KEY": "wrong"}
        backend = get_backend(ModelSpec.parse("openai-api/srcsim/sim/src-paper"), env=env)
        from storage.errors import ServiceError

        with pytest.raises(ServiceError):
            run_sources(items, backend, config=SourcesConfig(variants=("bare",)))
