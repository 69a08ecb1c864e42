"""Memory conflicts' human studies, registered with annotation.kinds on import."""

from study.conflicts.human import kinds, simulated

__all__ = ["kinds", "simulated"]
