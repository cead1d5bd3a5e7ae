"""Simulated Ray heads on their pod IPs, for a real API server's proxy to reach.

devcluster's own API server maps a simulated head's pod IP to the loopback port its dashboard
really listens on; kube-apiserver cannot, it dials `<pod IP>:<port>` from its process. So on
a node with the pod bridge, each simulated head's pod IP is added to the bridge as a /32 (the
host then owns it, as the node address) and a listener on each of the head's ports forwards
connections to wherever the simulator serves that port, as the process runtime's pods would
answer themselves. Needs root, like the bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Sequence

from devcluster.kubelet import network
from devcluster.networking.service_proxy import splice

Address = tuple[str, int]
log = logging.getLogger(__name__)


async def _ip(*args: str) -> None:
    process = await asyncio.create_subprocess_exec(
        "ip", *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    await process.wait()


class HeadAddresses:
    """`PodAddresses` on the pod bridge, forwarding to the simulator's local listeners."""

    def __init__(self, local: Callable[[str, int], Address | None]) -> None:
        self._local = local
        self._servers: dict[str, list[asyncio.Server]] = {}

    async def open(self, ip: str, ports: Sequence[int]) -> None:
        """Add `ip` to the bridge and listen on it at `ports`."""
        await _ip("addr", "add", f"{ip}/32", "dev", network.BRIDGE_NAME)
        servers = self._servers.setdefault(ip, [])
        for port in ports:
            accept = functools.partial(self._accept, (ip, port))
            try:
                servers.append(await asyncio.start_server(accept, ip, port))
            except OSError as err:
                log.warning("simulated head %s: cannot listen on port %d: %s", ip, port, err)

    async def close(self, ip: str) -> None:
        """Stop listening on `ip` and remove it from the bridge."""
        for server in self._servers.pop(ip, []):
            server.close()
        await _ip("addr", "del", f"{ip}/32", "dev", network.BRIDGE_NAME)

    async def close_all(self) -> None:
        """Remove every address (the node stops)."""
        for ip in list(self._servers):
            await self.close(ip)

    async def _accept(
        self, address: Address, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        target = self._local(*address)
        if target is None:  # a port the simulated head does not serve (yet)
            writer.close()
            return
        with contextlib.suppress(asyncio.CancelledError):
            await splice((reader, writer), target)
