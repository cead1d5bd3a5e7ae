"""The parts of `kuberay-temporal dev`: each an async context manager over a shared `DevStack`.

A component starts its part, publishes in the `DevStack` what later components need (the
Temporal client, the Kubernetes client and kubeconfig) and a line for the "what is running"
summary, runs while the block runs, and stops its part when the block ends. `COMPONENTS` is
the stack in start order with devcluster as the cluster, `KUBERNETES_COMPONENTS` with a real
control plane (`kubernetes_cluster`), which `KUBERAY_COMPONENT` can follow;
`kuberay_temporal.dev` starts them and stops them in reverse.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field

from temporalio.client import Client

from activities.kube.client import KubeClient
from activities.kube.client import connect as connect_kube
from activities.kuberay_metrics import KubeRayMetrics
from activities.registry import Copies, duration_series, watching
from bridge.running import Bridge
from bridge.signalling import Signaller
from bridge.state_gauges import StateGauges
from devcluster.faults import Faults
from devcluster.server import DevCluster
from kuberay_temporal.binaries import temporal_cli
from kuberay_temporal.crd_install import install_crds
from kuberay_temporal.kubernetes_cluster import run_kuberay, run_kubernetes
from kuberay_temporal.temporal_server import DevServer, DevServerOptions
from runtime.prometheus import SeriesSource, Telemetry, build_telemetry, serving_metrics
from runtime.settings import Settings
from runtime.telemetry import Tracing
from runtime.temporal_client import connect, payload_codec
from worker.codec_server import dev_ui_origins, serving_codec
from worker.running import (
    build_worker,
    configured_activities,
    dashboards,
    watching_ray_jobs,
)
from worker.search_attributes import ensure_search_attributes


@dataclass
class DevStack:
    """What the components share while the stack runs."""

    temporal: DevServerOptions
    """Where the dev server keeps its state and listens."""
    settings: Settings
    """The worker's settings, pointed at the dev server."""
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by a stop signal or by a component that failed while running."""
    kube_port: int = 6443
    """Where devcluster (or the real API server) serves the Kubernetes API."""
    runtime: str = "process"
    """How devcluster runs pods: real processes, or `simulated` (Ready without processes)."""
    kubelet_port: int = 10250
    """With a real control plane: where the node serves the kubelet API (logs)."""
    faults: Faults | None = None
    """Faults devcluster injects (reliability tests); None: none."""
    kuberay_namespace: str | None = None
    """With a real control plane: the namespace KubeRay's own operator reconciles; None: none."""
    client: Client | None = None
    """Connected to the dev server once the Temporal component is up."""
    kube: KubeClient | None = None
    """The worker's client, connected to devcluster (or the real API server) once it is up."""
    bridge_kube: KubeClient | None = None
    """The bridge's client where it has an identity of its own; None: the worker's."""
    telemetry: Telemetry | None = None
    """The client's runtime and KubeRay's metrics, once the Temporal component is up."""
    tracing: Tracing = field(default_factory=Tracing)
    """Traces of the bridge, the workflows and the activities (`runtime.telemetry`)."""
    gauges: StateGauges = field(default_factory=StateGauges)
    """KubeRay's state gauges: kept by the bridge, served on the worker's `/metrics`."""
    running: list[str] = field(default_factory=list)
    """One line per running thing, printed once everything is up."""
    failure: str | None = None
    """Why the stack stopped on its own, if it did."""

    def fail(self, reason: str) -> None:
        """Stop the stack because a component died; the first reason wins."""
        if self.failure is None:
            self.failure = reason
        self.stop.set()

    def require_kube(self) -> KubeClient:
        """Return the Kubernetes client; components after devcluster may use it."""
        if self.kube is None:
            raise RuntimeError("devcluster must start before this component")
        return self.kube

    def require_client(self) -> Client:
        """Return the Temporal client; components after the Temporal one may use it."""
        if self.client is None:
            raise RuntimeError("the Temporal component must start before this one")
        return self.client


@dataclass(frozen=True)
class Component:
    """One part of the stack: a name for messages and a context manager that runs it."""

    name: str
    run: Callable[[DevStack], AbstractAsyncContextManager[None]]


@asynccontextmanager
async def run_temporal(stack: DevStack) -> AsyncIterator[None]:
    """Run the dev server, register the search attributes and publish a client."""
    options = stack.temporal
    async with DevServer(temporal_cli(), options) as server:
        watcher = asyncio.create_task(server.wait())

        def on_exit(task: asyncio.Task[int]) -> None:
            if not task.cancelled():
                stack.fail(
                    f"Temporal dev server exited unexpectedly with code {task.result()} "
                    f"(log: {options.log_file})"
                )

        watcher.add_done_callback(on_exit)
        try:
            wanted = stack.settings
            stack.telemetry = build_telemetry(wanted.metrics_port, wanted.log_format)
            interceptors = stack.tracing.interceptors()
            client = await connect(stack.settings, stack.telemetry.runtime, interceptors)
            # `--search-attribute` only applies to a new database; an existing one gets
            # them here.
            await ensure_search_attributes(client, stack.settings.temporal_namespace)
            stack.client = client
            stack.running.append(
                f"temporal  {options.address} namespace {stack.settings.temporal_namespace} "
                f"(state {options.database}, log {options.log_file})"
            )
            stack.running.append(f"web UI    {options.ui_url}")
            yield
        finally:
            stack.client = None
            watcher.cancel()


@asynccontextmanager
async def run_codec_server(stack: DevStack) -> AsyncIterator[None]:
    """With payload encryption on, serve the codec endpoint the dev server's UI decodes with."""
    options, codec = stack.temporal, payload_codec(stack.settings)
    if options.ui_codec_port is None or codec is None:
        yield
        return
    origins = dev_ui_origins(options.ui_port)
    async with serving_codec(codec, origins, options.ui_codec_port, options.ip):
        stack.running.append(
            f"codec     {options.ui_codec_endpoint} (the web UI decrypts histories with it)"
        )
        yield


@asynccontextmanager
async def run_devcluster(stack: DevStack) -> AsyncIterator[None]:
    """Run devcluster, install the CRDs and publish a Kubernetes client and kubeconfig."""
    cluster = DevCluster(
        stack.temporal.state_dir,
        stack.kube_port,
        runtime=stack.runtime,
        pod_network=stack.runtime == "process",
        faults=stack.faults,
    )
    async with cluster:
        kube = await connect_kube(
            str(cluster.kubeconfig_path),
            stack.tracing.kube_tracer,
            stack.settings.kube_rate_limit(),
        )
        try:
            await install_crds(kube)
            stack.kube = kube
            stack.settings = stack.settings.model_copy(
                update={"kubeconfig": str(cluster.kubeconfig_path)}
            )
            stack.running.append(
                f"kubernetes {cluster.url} (devcluster; kubectl --kubeconfig "
                f"{cluster.kubeconfig_path})"
            )
            yield
        finally:
            stack.kube = None
            await kube.close()


@asynccontextmanager
async def run_worker(stack: DevStack) -> AsyncIterator[None]:
    """Run the worker in this process until the stack stops, then drain it."""
    settings, telemetry = stack.settings, stack.telemetry or build_telemetry(None)
    kube, durations = stack.kube, telemetry.kuberay
    async with (
        watching(kube, settings.namespaces) as copies,
        dashboards(kube, settings, copies) as connector,
        watching_ray_jobs(stack.require_client(), connector, copies),
        serving_metrics(
            settings.metrics_port,
            telemetry,
            _worker_series(stack, durations, copies),
            address=settings.metrics_address,
        ) as metrics,
        build_worker(
            stack.require_client(),
            settings,
            configured_activities(kube, settings, durations, copies, connector),
        ),
    ):
        stack.running.append(f"worker    task queue {settings.task_queue}")
        if metrics is not None:
            stack.running.append(f"metrics   {metrics.url}")
        yield


def _worker_series(
    stack: DevStack, durations: KubeRayMetrics | None, copies: Copies | None
) -> list[SeriesSource]:
    """One process: the bridge's state gauges join the worker's endpoint."""
    sources: list[SeriesSource] = [stack.gauges.text]
    if durations is not None:
        sources.append(duration_series(durations, copies))
    return sources


@asynccontextmanager
async def run_bridge(stack: DevStack) -> AsyncIterator[None]:
    """Run the watch bridge in this process."""
    settings = stack.settings
    bridge = Bridge.configured(
        stack.bridge_kube or stack.require_kube(),
        Signaller(stack.require_client(), settings.task_queue, stack.tracing.tracer),
        settings,
        stack.gauges,
    )
    task = asyncio.create_task(bridge.run())

    def on_exit(done: asyncio.Task[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            stack.fail(f"bridge stopped: {done.exception()}")

    task.add_done_callback(on_exit)
    try:
        await bridge.wait_listed()
        watched = ", ".join(n or "all namespaces" for n in settings.namespaces)
        if settings.ignored_namespaces:
            watched += f" but {', '.join(sorted(settings.ignored_namespaces))}"
        stack.running.append(f"bridge    watching ray.io CRs in {watched}")
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


_AFTER_CLUSTER: tuple[Component, ...] = (
    Component("codec server", run_codec_server),
    Component("Temporal dev server", run_temporal),
    Component("worker", run_worker),
    Component("bridge", run_bridge),
)
COMPONENTS: tuple[Component, ...] = (Component("devcluster", run_devcluster), *_AFTER_CLUSTER)
"""The stack, in start order."""
KUBERNETES_COMPONENTS: tuple[Component, ...] = (
    Component("kubernetes", run_kubernetes),
    *_AFTER_CLUSTER,
)
"""The stack on a real control plane with devcluster's kubelet as its node."""
KUBERAY_COMPONENT = Component("KubeRay operator", run_kuberay)
"""KubeRay's own operator, started right after a real control plane with `--kuberay-namespace`."""
CONTROL_PLANES = {"devcluster": COMPONENTS, "kubernetes": KUBERNETES_COMPONENTS}
"""`--control-plane` choices and their stacks."""
