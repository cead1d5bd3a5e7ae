"""`/healthz` and `/readyz` over HTTP, for Kubernetes probes of the worker and the bridge.

Neither process serves anything else, and a Temporal worker has no port of its own, so
without this the kubelet could only watch the process exist. `/healthz` is answered by the
process's own event loop, so it fails when the loop is wedged (liveness: restart me);
`/readyz` asks the process whether it is doing its job yet, that is polling the task queue
or having listed every watched kind (readiness: count me in, a rollout may go on).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web

ReadyProbe = Callable[[], Awaitable[bool]]
"""Answers "is this process doing its job?"; must be quick (it runs per probe)."""

PROBE_TIMEOUT = 2.0
"""A readiness answer that takes longer than this is a "no"; kubelet's default is 1 s."""

logger = logging.getLogger(__name__)


class HealthServer:
    """A tiny aiohttp server with the two probe endpoints."""

    def __init__(self, ready: ReadyProbe, port: int, host: str) -> None:
        # In a pod, `host` is the pod's IP: the kubelet probes there, not on loopback.
        self._ready = ready
        self._host, self._port = host, port
        self._runner: web.AppRunner | None = None

    @property
    def port(self) -> int:
        """The port served on; the real one once started, even when asked for port 0."""
        return self._port

    async def start(self) -> None:
        """Start serving."""
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        if self._port == 0:
            self._port = int(self._runner.addresses[0][1])
        logger.info("health endpoints on %s:%d (/healthz, /readyz)", self._host, self._port)

    async def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        try:
            ready = await asyncio.wait_for(self._ready(), PROBE_TIMEOUT)
        except TimeoutError:
            ready = False
        if ready:
            return web.Response(text="ready\n")
        return web.Response(status=503, text="not ready\n")


@asynccontextmanager
async def serving_health(
    port: int | None, ready: ReadyProbe, *, address: str
) -> AsyncIterator[HealthServer | None]:
    """Serve the probe endpoints for the duration of the block, if a port is configured.

    Args:
        port: Port to listen on (0: any free one); None serves nothing.
        ready: The readiness question.
        address: The IP address to listen on (`KUBERAY_TEMPORAL_HEALTH_ADDRESS`).

    Yields:
        The running server, or None without a port.
    """
    if port is None:
        yield None
        return
    server = HealthServer(ready, port, address)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
