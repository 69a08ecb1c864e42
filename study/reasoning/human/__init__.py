"""Reasoning drift's human studies (curation and response checks), registered on import."""

from study.reasoning.human import curation, responses, simulated

__all__ = ["curation", "responses", "simulated"]
