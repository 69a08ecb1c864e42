"""human studies, registered with annotation.kinds on import."""

from study.sources.human import kinds

__all__ = ["kinds"]
