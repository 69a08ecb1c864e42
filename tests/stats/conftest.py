"""Fixtures for the statistics tests: run compiled-path tests under both implementations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from driftlens_core import use_implementation
from driftlens_core._impl import _try_import


def _compiled_available() -> bool:
    return _try_import("_bootstrap") is not None


@pytest.fixture(params=["python", "compiled"])
def impl(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test once per implementation (compiled must be built: a missing one fails)."""
    name = request.param
    if name == "compiled" and not _compiled_available():
        pytest.fail("driftlens_core._bootstrap is not built; run setup.py build_ext --inplace")
    with use_implementation(name):
        yield name
