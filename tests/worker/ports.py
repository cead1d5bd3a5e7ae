"""Free TCP ports for tests that start servers on fixed ports."""

from __future__ import annotations

import socket


def free_port() -> int:
    """Return a port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
