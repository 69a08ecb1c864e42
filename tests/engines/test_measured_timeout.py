"""The real-engine tests' request timeout follows the measured pace (no engine needed)."""

from __future__ import annotations

from tests.engines.conftest import TIMEOUT_CAP_S, TIMEOUT_FLOOR_S, request_timeout_for


def test_the_timeout_grows_with_a_slower_engine_within_its_bounds() -> None:
    quiet = request_timeout_for(0.02, max_tokens=200, concurrency=8)
    loaded = request_timeout_for(0.2, max_tokens=200, concurrency=8)
    assert quiet == TIMEOUT_FLOOR_S  # 3 x 0.02 x 200 x 8 = 96 s: the floor
    assert loaded == 3 * 0.2 * 200 * 8  # 960 s: ten times slower, ten times the patience
    assert request_timeout_for(5.0, max_tokens=200, concurrency=8) == TIMEOUT_CAP_S
