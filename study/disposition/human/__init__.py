"""Disposition drift's human studies, registered with annotation.kinds on import."""

from study.disposition.human import kinds

__all__ = ["kinds"]
