"""Ray addresses: their shape checked up front, their reachability before ``ray.init``.

Kept apart from :mod:`study.cluster.ray_executor` (the only importer of ``ray``) so a
malformed address is refused without importing Ray at all.
"""

from __future__ import annotations

from storage.errors import ConfigError


def parse_ray_address(address: str | None) -> tuple[str, int] | None:
    """``(host, port)`` of a Ray address, ``None`` for ``auto`` (or no address).

    Checked before anything starts: a malformed address otherwise waited out Ray's own
    connection timeout and printed its warnings before the one-line error.

    Raises:
        ConfigError: not ``auto``, ``ray://HOST:PORT`` or ``HOST:PORT`` with a port
            in 1-65535.
    """
    if address is None or address.strip() == "auto":
        return None
    rest = address.strip().removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError(
            f"--address {address!r} is not a Ray address; use auto, ray://HOST:PORT or HOST:PORT."
        )
    return host.strip("[]"), int(port)


def check_reachable(host: str, port: int, *, address: str, timeout_s: float = 5.0) -> None:
    """Refuse, in one line, a Ray address nothing answers on (before ``ray.init``, whose
    own refusal comes after its connection timeout and a page of warnings).

    Raises:
        ConfigError: the TCP connection was refused, timed out or the host is unknown.
    """
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    raise ConfigError(
        f"No Ray cluster answers at {address!r} ({reason}); start one with "
        "`ray start --head --node-ip-address 127.0.0.1` or check the address."
    )
