"""The worker's Prometheus endpoint: Temporal SDK metrics and KubeRay's, on one port.

The SDK's metrics come from its Rust core, whose Prometheus exporter serves its own port and
cannot take series from Python that vanish again. KubeRay's state gauges must vanish with
their CR (dashboards `count()` them), so `activities.kuberay_metrics` renders KubeRay's
series itself.
One endpoint still serves both: the SDK's exporter listens on a private loopback port and the
public `/metrics` handler appends the process's own series (its `SeriesSource`s) to what it
reads from there. The worker adds KubeRay's duration gauges, the bridge the state gauges
(see `activities.kuberay_metrics` for why), and the one-process dev stack both.

An exporter binds its address for the life of its `Runtime`, so a runtime is built per
worker start (on a fresh loopback port) and handed to the client; the default runtime stays
untouched, and tests can start many workers in one process.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    PrometheusConfig,
    Runtime,
    TelemetryConfig,
)

from activities.kuberay_metrics import KubeRayMetrics

logger = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""Prometheus' text exposition format."""

SDK_SCRAPE_TIMEOUT = 5.0
"""How long `/metrics` waits for the SDK's exporter before answering without its series."""

_BIND_ATTEMPTS = 5

SeriesSource = Callable[[], str]
"""Renders more series (Prometheus text format) per scrape, appended after the SDK's, from
memory: a scrape sends no request to the API server, whoever sends it and however often."""


@dataclass(frozen=True)
class Telemetry:
    """The metrics side of one worker start: the runtime for its client and the recorder."""

    runtime: Runtime | None
    """Pass to `Client.connect`; None: metrics are off and the default runtime is used."""
    sdk_address: str | None
    """Loopback host:port of the SDK's own exporter, read by the public endpoint."""
    kuberay: KubeRayMetrics | None
    """Give to the activities, so their status writes set KubeRay's duration gauges."""


def build_telemetry(metrics_port: int | None, log_format: str = "text") -> Telemetry:
    """The runtime and recorder for a process whose endpoint is `metrics_port`.

    Args:
        metrics_port: The `KUBERAY_TEMPORAL_METRICS_PORT` setting; None turns metrics off.
        log_format: The `KUBERAY_TEMPORAL_LOG_FORMAT` setting. With `json` the SDK core's
            own warnings go through Python logging (logger `temporalio.core`), so that they
            become JSON lines too instead of the core's text on stderr.

    Returns:
        A new runtime when either asks for one: its Prometheus exporter on a free loopback
        port if there is a metrics port. Otherwise nothing is built: the default runtime.

    Raises:
        RuntimeError: The SDK's exporter could bind no loopback port.
    """
    if metrics_port is None and log_format != "json":
        return Telemetry(runtime=None, sdk_address=None, kuberay=None)
    logging_config = LoggingConfig.default
    if log_format == "json":
        forwarding = LogForwardingConfig(logger=logging.getLogger("temporalio.core"))
        logging_config = dataclasses.replace(logging_config, forwarding=forwarding)
    if metrics_port is None:
        return Telemetry(
            runtime=Runtime(telemetry=TelemetryConfig(logging=logging_config)),
            sdk_address=None,
            kuberay=None,
        )
    for attempt in range(_BIND_ATTEMPTS):
        address = f"127.0.0.1:{_free_loopback_port()}"
        config = TelemetryConfig(
            logging=logging_config, metrics=PrometheusConfig(bind_address=address)
        )
        try:
            runtime = Runtime(telemetry=config)
        except ValueError as err:
            # Someone took the port between the probe and the bind; take another.
            if attempt == _BIND_ATTEMPTS - 1:
                raise RuntimeError(f"cannot start the SDK's metrics exporter: {err}") from err
            continue
        return Telemetry(runtime=runtime, sdk_address=address, kuberay=KubeRayMetrics())
    raise AssertionError("unreachable")


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class MetricsServer:
    """`/metrics` on one address: the SDK's series followed by the process's own.

    It names every CR the process knows of, in every namespace, to whoever reaches it: the
    address is the pod's IP in a cluster (where a NetworkPolicy admits Prometheus alone) and
    loopback on a workstation.
    """

    def __init__(
        self, sdk_address: str | None, sources: Sequence[SeriesSource], port: int, host: str
    ) -> None:
        self._sdk_address = sdk_address
        self._sources = list(sources)
        self._host, self._port = host, port
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def port(self) -> int:
        """The port served on; the real one once started, even when asked for port 0."""
        return self._port

    @property
    def url(self) -> str:
        """Where to scrape."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}/metrics"

    async def start(self) -> None:
        """Start serving."""
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=SDK_SCRAPE_TIMEOUT)
        )
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self._host, self._port).start()
        if self._port == 0:
            self._port = int(self._runner.addresses[0][1])
        logger.info("Prometheus metrics on %s", self.url)

    async def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _metrics(self, _: web.Request) -> web.Response:
        parts = [await self._sdk_text()]
        parts += [source() for source in self._sources]
        body = "".join(part if part.endswith("\n") else f"{part}\n" for part in parts if part)
        return web.Response(body=body.encode(), headers={"Content-Type": CONTENT_TYPE})

    async def _sdk_text(self) -> str:
        address = self._sdk_address
        if address is None or self._session is None:
            return ""
        try:
            async with self._session.get(f"http://{address}/metrics") as response:
                response.raise_for_status()
                return await response.text()
        except (TimeoutError, aiohttp.ClientError) as err:
            logger.warning("metrics: the SDK's exporter at %s did not answer: %s", address, err)
            return ""


@asynccontextmanager
async def serving_metrics(
    port: int | None,
    telemetry: Telemetry,
    sources: Sequence[SeriesSource] = (),
    *,
    address: str,
) -> AsyncIterator[MetricsServer | None]:
    """Serve `/metrics` for the duration of the block, if a port is configured.

    Args:
        port: Port to listen on (0: any free one); None serves nothing.
        telemetry: What `build_telemetry` built for this process.
        sources: The process's own series, after the SDK's.
        address: The IP address to listen on (`KUBERAY_TEMPORAL_METRICS_ADDRESS`).

    Yields:
        The running server, or None without a port.
    """
    if port is None:
        yield None
        return
    server = MetricsServer(telemetry.sdk_address, sources, port, address)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
