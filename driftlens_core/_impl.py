"""Choose between the compiled kernels and their pure-Python twins.

``DRIFTLENS_IMPL`` (``python`` | ``compiled`` | unset = ``auto``) or
:func:`use_implementation` pick the path. ``compiled`` fails loudly when an
extension is missing (no silent fallback); ``auto`` uses the compiled kernels when
they are built and the pure-Python twins otherwise, and :func:`implementation`
always tells which one is active so reports can show it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Literal

Impl = Literal["compiled", "python"]

# Every compiled extension module of the core. ``implementation()`` is "compiled"
# only when all of them import.
COMPILED_MODULES: tuple[str, ...] = ("_metrics", "_bootstrap")

_override: str | None = None
_cache: dict[str, ModuleType | None] = {}


class CompiledCoreMissing(ImportError):
    """The compiled core was requested but an extension is not built."""


def requested() -> str:
    """Return the requested path: ``"python"``, ``"compiled"`` or ``"auto"``."""
    value = _override if _override is not None else os.environ.get("DRIFTLENS_IMPL", "auto")
    value = value.strip().lower() or "auto"
    if value not in {"python", "compiled", "auto"}:
        raise ValueError(f"DRIFTLENS_IMPL must be 'python', 'compiled' or 'auto', not {value!r}")
    return value


def _try_import(name: str) -> ModuleType | None:
    if name not in _cache:
        try:
            _cache[name] = importlib.import_module(f"driftlens_core.{name}")
        except ImportError:
            _cache[name] = None
    return _cache[name]


def compiled_module(name: str) -> ModuleType | None:
    """Return the compiled extension ``name`` if it should be used, else ``None``.

    Raises:
        CompiledCoreMissing: ``compiled`` was requested and the extension is not built.
    """
    req = requested()
    if req == "python":
        return None
    module = _try_import(name)
    if module is None and req == "compiled":
        raise CompiledCoreMissing(
            f"DRIFTLENS_IMPL=compiled but the extension driftlens_core.{name} is not built; "
            "run `pip install -e .` (or `python setup.py build_ext --inplace`) first"
        )
    return module


def implementation() -> Impl:
    """Return which implementation of the core is active: ``"compiled"`` or ``"python"``."""
    if requested() == "python":
        return "python"
    modules = [compiled_module(name) for name in COMPILED_MODULES]
    return "compiled" if all(m is not None for m in modules) else "python"


@contextmanager
def use_implementation(name: str) -> Iterator[None]:
    """Force ``"python"``, ``"compiled"`` or ``"auto"`` inside a ``with`` block."""
    global _override
    previous = _override
    _override = name
    try:
        requested()  # validate early
        yield
    finally:
        _override = previous
