"""The simulator child process survives a port taken between picking and binding it."""

from __future__ import annotations

import socket
import urllib.request

from study.sim_endpoint import SimProcess


def test_a_port_taken_after_it_was_picked_is_replaced_by_a_new_one() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        sim = SimProcess(api_key="k-port-test")
        sim.port = int(taken.getsockname()[1])  # as if another process won the race
        with sim as url:
            assert sim.port != taken.getsockname()[1]
            request = urllib.request.Request(
                f"{url}/models", headers={"Authorization": "Bearer k-port-test"}
            )
            with urllib.request.urlopen(request, timeout=10) as reply:
                assert reply.status == 200
