"""Disposition drift's human studies, registered with annotation.kinds on import."""

from study.disposition.human import kinds, simulated

__all__ = ["kinds", "simulated"]
