"""ClusterIPs that answer: a userspace TCP proxy per Service port, as kube-proxy once was.

Ray workers and job submitters dial `<cluster>-head-svc.<ns>.svc.cluster.local:6379`, which
the hosts file maps to the Service's ClusterIP. With no kube-proxy and no iptables rules here,
each ClusterIP is added as a /32 to the pod bridge (pods route 10.96.0.0/12 through it, so the
host receives their packets) and a listener on `ClusterIP:port` forwards each connection to a
ready endpoint of that Service port, round-robin. Addresses and listeners follow Services as
they come and go, and are all removed when devcluster stops. Only TCP is proxied.

`listeners` is pure and table-tested; `ServiceProxy` owns the sockets and addresses.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import ipaddress
import itertools
import logging
from collections.abc import Callable
from typing import Any

from devcluster.handler import Handler
from devcluster.networking.endpoint_slices import SERVICES, ready_targets, service_slices
from devcluster.store import Event, ObjectView

JsonObject = dict[str, Any]
Address = tuple[str, int]  # ClusterIP, port
Backend = tuple[str, str, str]  # namespace, Service name, Service port name
log = logging.getLogger(__name__)
POD_NETWORK = ipaddress.ip_network("10.244.0.0/16")
_CONNECT_TIMEOUT = 5.0
_CHUNK = 64 * 1024


def listeners(services: list[JsonObject]) -> dict[Address, Backend]:
    """Return every ClusterIP:port to listen on and the Service port behind it."""
    out: dict[Address, Backend] = {}
    for service in services:
        meta, spec = service["metadata"], service.get("spec") or {}
        ip = spec.get("clusterIP")
        if not ip or ip == "None" or spec.get("type") == "ExternalName":
            continue
        for port in spec.get("ports") or []:
            if port.get("protocol", "TCP") == "TCP":
                backend = (meta.get("namespace", ""), meta["name"], port.get("name", ""))
                out[(ip, int(port["port"]))] = backend
    return out


def allowed_destination(ip: str) -> bool:
    """Return whether the proxies may dial this address: loopback or the pod network only."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return address.is_loopback or address in POD_NETWORK


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction of a connection until EOF, then half-close the other side."""
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()


async def splice(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter], target: Address
) -> None:
    """Connect to `target` and copy bytes both ways until both sides are done."""
    reader, writer = client
    try:
        upstream = await asyncio.wait_for(asyncio.open_connection(*target), _CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as err:
        log.debug("service proxy: cannot reach %s: %s", target, err)
        writer.close()
        return
    try:
        await asyncio.gather(pipe(reader, upstream[1]), pipe(upstream[0], writer))
    finally:
        for side in (writer, upstream[1]):
            side.close()


async def _ip(*args: str) -> None:
    process = await asyncio.create_subprocess_exec(
        "ip", *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    await process.wait()


def _bridge() -> tuple[str, Callable[[], None]] | None:
    # The process kubelet owns the bridge; without it (simulated runtime) there is nothing to do.
    try:
        network = importlib.import_module("devcluster.kubelet.network")
    except ImportError:
        return None
    return str(network.BRIDGE_NAME), network.ensure_bridge


class ServiceProxy:
    """Listens on every Service's ClusterIP ports and forwards to ready endpoints."""

    def __init__(self, bridge: str | None = None, add_addresses: bool = True) -> None:
        self._bridge = bridge
        self._add_addresses = add_addresses
        self._servers: dict[Address, asyncio.Server] = {}
        self._backends: dict[Address, Backend] = {}
        self._addresses: set[str] = set()
        self._turns = itertools.count()
        self._connections: set[asyncio.Task[None]] = set()
        self._view: ObjectView | None = None

    def __repr__(self) -> str:
        return "ServiceProxy()"

    async def run(self, handler: Handler) -> None:
        """Follow devcluster's Services until cancelled, then remove everything."""
        await self.follow(handler.store)

    async def follow(self, view: ObjectView) -> None:
        """Follow the Services and EndpointSlices of `view` until cancelled."""
        self._view = view
        if self._add_addresses and self._bridge is None:
            found = _bridge()
            if found is None:
                log.warning("service proxy: no pod bridge; ClusterIPs stay unreachable")
                return
            self._bridge = found[0]
            await asyncio.to_thread(found[1])
        changed = asyncio.Event()

        def listen(event: Event) -> None:
            if event.resource == SERVICES:
                changed.set()

        view.add_listener(listen)
        try:
            while True:
                await self.sync(listeners(view.objects(SERVICES)))
                await changed.wait()
                changed.clear()
        finally:
            view.remove_listener(listen)
            await asyncio.shield(self.close())

    async def sync(self, wanted: dict[Address, Backend]) -> None:
        """Open listeners for new addresses and close those no Service has any more."""
        self._backends = wanted
        for address in [a for a in self._servers if a not in wanted]:
            self._servers.pop(address).close()
        for ip in self._addresses - {ip for ip, _ in wanted}:
            await self._remove_address(ip)
        for address in wanted:
            if address in self._servers:
                continue
            await self._add_address(address[0])
            try:
                accept = functools.partial(self._accept, address)
                self._servers[address] = await asyncio.start_server(accept, *address)
            except OSError as err:
                log.warning("service proxy: cannot listen on %s:%s: %s", *address, err)

    async def close(self) -> None:
        """Close every listener and connection and remove every ClusterIP address."""
        await self.sync({})
        for task in list(self._connections):
            task.cancel()

    async def _add_address(self, ip: str) -> None:
        if self._add_addresses and ip not in self._addresses and self._bridge:
            await _ip("addr", "add", f"{ip}/32", "dev", self._bridge)
        self._addresses.add(ip)

    async def _remove_address(self, ip: str) -> None:
        if self._add_addresses and self._bridge:
            await _ip("addr", "del", f"{ip}/32", "dev", self._bridge)
        self._addresses.discard(ip)

    def pick(self, address: Address) -> Address | None:
        """Return the next ready endpoint for a listener, round-robin, or None."""
        backend = self._backends.get(address)
        if backend is None or self._view is None:
            return None
        namespace, name, port_name = backend
        targets = ready_targets(service_slices(self._view, namespace, name), port_name)
        targets = [t for t in targets if allowed_destination(t[0])]
        return targets[next(self._turns) % len(targets)] if targets else None

    async def _accept(
        self, address: Address, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        target = self.pick(address)
        if target is None:
            writer.close()  # as kube-proxy rejects: no endpoints, no connection
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await splice((reader, writer), target)
        finally:
            self._connections.discard(task)
