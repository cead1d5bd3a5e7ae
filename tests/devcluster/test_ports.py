"""Ports handed to servers on their command line stay out of the kernel's ephemeral range."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from devcluster import ports


def _ephemeral_low() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_free_ports_differ_are_bindable_and_lie_below_the_ephemeral_range() -> None:
    drawn = ports.free_ports(50)

    assert len(set(drawn)) == 50
    # The kernel hands out only ephemeral ports to `bind(0)` and to outgoing connections,
    # so no other process is given one of these between our check and the server's bind.
    assert all(1024 < port < _ephemeral_low() for port in drawn)
    for port in drawn:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))


def test_a_kernel_that_hands_out_every_port_is_asked_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = tmp_path / "ip_local_port_range"
    wide.write_text("1024\t65535\n")
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE", wide)

    port = ports.free_port()

    assert port >= 1024
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
