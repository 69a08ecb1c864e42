"""Tables of named things: study specs, simulator presets and profiles keyed by their names.

Each instrument declares its study specs (``human/``) and its simulated models' presets
and profiles (``sim/``) once, as objects carrying their own ``name``; the lookup table is
derived from them, so a name is never written twice and two entries cannot disagree with
their keys.
"""

from __future__ import annotations

from typing import Protocol, TypeVar


class Named(Protocol):
    """Anything with a ``name`` (a study spec, a preset, a profile)."""

    @property
    def name(self) -> str:
        """The name it is looked up by."""
        ...


N = TypeVar("N", bound=Named)


def by_name(*items: N) -> dict[str, N]:
    """``items`` keyed by their names, in the order given (a later one wins a repeated name)."""
    return {item.name: item for item in items}
