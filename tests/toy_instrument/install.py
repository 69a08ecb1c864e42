"""Install the toy instrument for a test module as an outside package would be installed.

Its entry point is put on the path (:func:`tests.entry_points.installed_entry_points`) and
the generic rooms' registries are restored afterwards, so the toy's presets, task handlers
and study kinds never leak into later tests. The built-in instruments are loaded first, so
the restored registries still hold them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.entry_points import installed_entry_points
from tests.toy_instrument.plugin import ENTRY_POINT

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def installed_toy(root: Path) -> Iterator[None]:
    """The toy announced by its entry point while the block runs (``root``: a fresh folder)."""
    import annotation.kinds as kinds
    import llm.sim.registry as sim_registry
    import llm.sim.tasks as sim_tasks

    sim_registry.load_instruments()
    kinds.load_kinds()
    with (
        pytest.MonkeyPatch.context() as mp,
        installed_entry_points(root, "driftlens-toy", [ENTRY_POINT]),
    ):
        mp.setattr(
            sim_registry, "_FAMILIES", {k: dict(v) for k, v in sim_registry._FAMILIES.items()}
        )
        mp.setattr(sim_registry, "_loaded", set(sim_registry._loaded))
        mp.setattr(sim_tasks, "_HANDLERS", dict(sim_tasks._HANDLERS))
        mp.setattr(kinds, "_KINDS", dict(kinds._KINDS))
        mp.setattr(kinds, "_loaded", set(kinds._loaded))
        # as an installed package would be, the toy is importable by the processes a test
        # starts (a background job runs in one)
        here = os.environ.get("PYTHONPATH")  # the entry point's folder: restored on leaving
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, str(ROOT)) if p)
        try:
            yield
        finally:
            if here is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = here
    # a later install registers the toy afresh (its modules register when imported)
    for name in [m for m in sys.modules if m.startswith("tests.toy_instrument.")]:
        if name not in (__name__, "tests.toy_instrument.plugin"):
            del sys.modules[name]
