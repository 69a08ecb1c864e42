"""Memory conflicts' human studies, registered with annotation.kinds on import."""

from study.conflicts.human import kinds

__all__ = ["kinds"]
