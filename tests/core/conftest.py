"""Fixtures of the core tests: run each metric test under both implementations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from driftlens_core import use_implementation


@pytest.fixture(params=["python", "compiled"])
def impl(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test inside ``use_implementation(<param>)``; yields the implementation name."""
    with use_implementation(request.param):
        yield request.param
