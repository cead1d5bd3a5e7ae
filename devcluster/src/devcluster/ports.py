"""Free loopback ports for servers started with a port on their command line.

A port is drawn below the kernel's ephemeral range, not from `bind(port 0)`. A port the
kernel hands out as "any free port" is handed out again as soon as it is closed: to the
next `bind(0)` (the Temporal dev server draws its HTTP, metrics and internal service ports
so, and Ray many of its own) or as the local end of an outgoing connection. Between our
check and the server's own bind there is then a window in which another process takes it,
and the server dies with "address already in use". Below the ephemeral range only a
process that asks for that number itself can take it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

# Above Ray's default worker ports (10002-19999) and the usual fixed ports of the servers
# we start (7233, 8233, 6379, 8265, 2379, 6443...); below Kubernetes' NodePort range.
_LOWEST = 20000
_HIGHEST = 29999
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_ATTEMPTS = 200

# Ports this process handed out: a server told one may not have bound it yet.
_handed_out: set[int] = set()


def free_port() -> int:
    """Return a loopback port nothing listens on, outside the kernel's ephemeral range.

    Returns:
        A port number the caller's server binds soon after; never the same twice in one
        process.

    Raises:
        RuntimeError: No free port was found in the range.
    """
    highest = min(_HIGHEST, _ephemeral_low() - 1)
    if highest < _LOWEST:
        # The kernel hands out (almost) every port: nothing is safer than asking it.
        return _kernel_port()
    for _ in range(_ATTEMPTS):
        port = random.randint(_LOWEST, highest)
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free loopback port between {_LOWEST} and {highest}")


def free_ports(count: int) -> list[int]:
    """Return `count` different free ports (see `free_port`)."""
    return [free_port() for _ in range(count)]


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default when unreadable)."""
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    # No SO_REUSEADDR: a port still in TIME_WAIT counts as taken, which is the safe side.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _kernel_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
