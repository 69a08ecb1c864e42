"""Failed model requests of a run: how many, of which kind, and whether a rerun helps.

Every instrument's run and judge commands end the same way when requests failed (the rule
``generate`` set): the summary line, then this paragraph on stderr, and exit status 3.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: Failure kinds a rerun cannot fix (the request itself was rejected).
PERMANENT_KINDS: frozenset[str] = frozenset({"bad_request", "auth", "model", "url"})

#: Exit status of a command some of whose requests failed.
FAILED_REQUESTS_EXIT = 3


@dataclass(frozen=True)
class RequestFailures:
    """The failed requests of one command.

    Attributes:
        failed: requests that ended in an error (or with no text).
        requested: requests asked by this command.
        kinds: failures by kind (``server``, ``rate_limit``, ``timeout``, ``empty``...).
        retry_after_s: the longest wait an endpoint asked for, if any.
    """

    failed: int
    requested: int
    kinds: Mapping[str, int] = field(default_factory=dict)
    retry_after_s: float | None = None

    @property
    def retry_can_help(self) -> bool:
        """Whether running the same command again may answer the failed requests."""
        return not self.kinds or any(k not in PERMANENT_KINDS for k in self.kinds)

    def advice(self) -> str:
        """One paragraph: how many failed, why, and whether a rerun helps."""
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.kinds.items()))
        text = f"{self.failed} of {self.requested} requests failed" + (
            f" ({kinds})." if kinds else "."
        )
        if self.retry_after_s is not None:
            text += f" The endpoint asked to wait {self.retry_after_s:g} s (Retry-After)."
        if self.retry_can_help:
            text += " Run the same command again to retry them; answers stored are kept"
            if any(k in PERMANENT_KINDS for k in self.kinds):
                text += " (the rejected ones will fail again until the request is fixed)"
            text += "."
        else:
            text += (
                " Running it again will not help: the endpoint rejected these requests "
                "(see the error column of the responses); fix the model, key, URL or "
                "request settings first."
            )
        return text


def count_kind(kinds: dict[str, int], error_kind: str | None) -> None:
    """Add one failure of ``error_kind`` (``backend`` when the backend named none)."""
    kind = error_kind or "backend"
    kinds[kind] = kinds.get(kind, 0) + 1
