"""The error family every room raises for expected, user-facing failures.

It lives in ``storage`` because every room above the core may import ``storage``;
the compiled core raises plain ``ValueError`` instead (it imports nothing of ours).
"""

from __future__ import annotations


class DriftLensError(Exception):
    """An expected failure with a message meant for the user (one sentence)."""

    exit_code: int = 2


class ConfigError(DriftLensError):
    """A setting, option or environment variable is missing or invalid."""


class InputError(DriftLensError):
    """A file or table the user gave us cannot be used as it is."""


class ServiceError(DriftLensError):
    """An external server (model endpoint, Label Studio, database) failed or refused us."""

    exit_code = 3


class NotFoundError(DriftLensError):
    """A named object (run, round, proposal, study...) does not exist in the workspace."""
