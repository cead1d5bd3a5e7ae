"""`kuberay-temporal dev`: the embedded local stack, in the foreground, state in one directory.

The stack is a list of components started in order and stopped in reverse order:
devcluster (with our CRDs installed), the codec server when payloads are encrypted (so the
web UI shows them decrypted), the Temporal dev server, the worker and the bridge.
Each component is an async context manager over a shared `DevStack`, in which it
publishes what later components need (the Temporal client, later the kubeconfig) and a
line for the "what is running" summary. Ctrl-C or SIGTERM stops them all; the worker
drains before the server goes. The state directory keeps the SQLite database, so a second
start continues where the first stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import ValidationError
from temporalio.client import Client
from temporalio.service import RPCError

from activities.kube import KubeClient
from activities.kube import connect as connect_kube
from activities.registry import build_activities
from bridge.metrics import cr_state
from bridge.running import Bridge
from bridge.signalling import Signaller
from devcluster.command import faults_from
from devcluster.faults import Faults
from devcluster.kubelet import RUNTIMES, RuntimeUnavailable
from devcluster.server import DevCluster
from kuberay_temporal.binaries import BinaryNotFoundError, temporal_cli
from kuberay_temporal.crd_install import install_crds
from kuberay_temporal.temporal_server import DevServer, DevServerError, DevServerOptions
from worker.client import connect, exit_without_finalizing
from worker.codec import PAYLOAD_KEY_VARIABLE, EncryptionCodec, parse_keys
from worker.codec_server import DEFAULT_PORT as DEFAULT_CODEC_PORT
from worker.codec_server import dev_ui_origins, serving_codec
from worker.command import settings_from
from worker.logs import configure_logging
from worker.metrics import SeriesSource, Telemetry, build_telemetry, serving_metrics
from worker.running import build_worker, stop_on_signals
from worker.search_attributes import ALL_KEYS, SearchAttributeError, ensure_search_attributes
from worker.settings import WorkerSettings, describe_invalid
from worker.tracing import Tracing, TracingConfigError, build_tracing

# Errors that mean "the stack could not run"; reported in one line, exit code 1.
_STACK_ERRORS = (
    BinaryNotFoundError,
    DevServerError,
    SearchAttributeError,
    RPCError,
    RuntimeError,
    RuntimeUnavailable,
)


@dataclass
class DevStack:
    """What the components share while the stack runs."""

    temporal: DevServerOptions
    """Where the dev server keeps its state and listens."""
    settings: WorkerSettings
    """The worker's settings, pointed at the dev server."""
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by a stop signal or by a component that failed while running."""
    kube_port: int = 6443
    """Where devcluster serves the Kubernetes API."""
    runtime: str = "process"
    """How devcluster runs pods: real processes, or `simulated` (Ready without processes)."""
    faults: Faults | None = None
    """Faults devcluster injects (reliability tests); None: none."""
    client: Client | None = None
    """Connected to the dev server once the Temporal component is up."""
    kube: KubeClient | None = None
    """Connected to devcluster once it is up."""
    telemetry: Telemetry | None = None
    """The client's runtime and KubeRay's metrics, once the Temporal component is up."""
    tracing: Tracing = field(default_factory=Tracing)
    """Traces of the bridge, the workflows and the activities (`worker.tracing`)."""
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
    endpoint, key = stack.temporal.ui_codec_endpoint, stack.settings.payload_key
    if endpoint is None or key is None:
        yield
        return
    codec = EncryptionCodec(parse_keys(key.get_secret_value()))
    port = urlsplit(endpoint).port or DEFAULT_CODEC_PORT
    origins = dev_ui_origins(stack.temporal.ui_port)
    async with serving_codec(codec, origins, port):
        stack.running.append(f"codec     {endpoint} (the web UI decrypts histories with it)")
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
        kube = await connect_kube(str(cluster.kubeconfig_path), stack.tracing.kube_tracer)
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
    activities = build_activities(
        stack.kube,
        settings.build_options(),
        dashboard_access=settings.dashboard_access,
        metrics=telemetry.kuberay,
        job_options=settings.job_options(),
    )
    kube, durations = stack.kube, telemetry.kuberay
    sources: list[SeriesSource] = [] if kube is None else [lambda: cr_state(kube)]
    if durations is not None:
        sources.append(lambda: durations.collect(kube))
    # One process: the bridge's state gauges join the worker's endpoint.
    async with (
        serving_metrics(settings.metrics_port, telemetry, sources) as metrics,
        build_worker(stack.require_client(), settings, activities),
    ):
        stack.running.append(f"worker    task queue {settings.task_queue}")
        if metrics is not None:
            stack.running.append(f"metrics   http://127.0.0.1:{metrics.port}/metrics")
        yield


@asynccontextmanager
async def run_bridge(stack: DevStack) -> AsyncIterator[None]:
    """Run the watch bridge in this process."""
    settings = stack.settings
    bridge = Bridge(
        stack.require_kube(),
        Signaller(stack.require_client(), settings.task_queue, stack.tracing.tracer),
        namespaces=settings.namespaces,
        relist_period=settings.relist_seconds,
        concurrency=settings.bridge_concurrency,
    )
    task = asyncio.create_task(bridge.run())

    def on_exit(done: asyncio.Task[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            stack.fail(f"bridge stopped: {done.exception()}")

    task.add_done_callback(on_exit)
    try:
        await bridge.wait_listed()
        stack.running.append("bridge    watching ray.io CRs in all namespaces")
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


COMPONENTS: tuple[Component, ...] = (
    Component("devcluster", run_devcluster),
    Component("codec server", run_codec_server),
    Component("Temporal dev server", run_temporal),
    Component("worker", run_worker),
    Component("bridge", run_bridge),
)
"""The stack, in start order."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `dev` subcommand.

    Args:
        subparsers: The dispatcher's subcommand collection.
    """
    parser = subparsers.add_parser(
        "dev",
        help="run the embedded local stack in the foreground",
        description=(
            "Start the Temporal dev server (SQLite state and UI) and the worker, print "
            "where they are, and run until Ctrl-C. A second start on the same state "
            "directory continues with the same workflows."
        ),
    )
    parser.add_argument(
        "--state-dir", type=Path, default=Path(".state"), help="state directory (default .state)"
    )
    parser.add_argument(
        "--temporal-port", type=int, default=7233, help="Temporal gRPC port (default 7233)"
    )
    parser.add_argument("--ui-port", type=int, default=8233, help="Temporal UI port (default 8233)")
    parser.add_argument(
        "--kube-port", type=int, default=6443, help="devcluster API port (default 6443)"
    )
    parser.add_argument(
        "--codec-port",
        type=int,
        default=DEFAULT_CODEC_PORT,
        help=f"with {PAYLOAD_KEY_VARIABLE} set, the codec server the UI decrypts with "
        f"(default {DEFAULT_CODEC_PORT})",
    )
    parser.add_argument(
        "--runtime",
        choices=RUNTIMES,
        default="process",
        help="how devcluster runs pods: real processes (default; needs root) or simulated",
    )
    parser.add_argument(
        "--fault-rate",
        type=float,
        default=None,
        help="devcluster injects faults into this share of requests, e.g. 0.2, for "
        "reliability tests (env DEVCLUSTER_FAULT_RATE; see `kuberay-temporal devcluster -h`)",
    )
    parser.add_argument("--fault-seed", type=int, default=None, help="seed of --fault-rate")
    parser.add_argument(
        "--task-queue", help="task queue (env KUBERAY_TEMPORAL_TASK_QUEUE, default kuberay)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the stack until a stop signal, then end the process.

    Args:
        args: Parsed command line.

    Returns:
        Never returns: the process exits with 0 after a clean stop, 1 if a component
        failed, 2 for bad settings (see `worker.client.exit_without_finalizing`).
    """
    exit_without_finalizing(_run(args))


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    temporal = DevServerOptions(
        state_dir=args.state_dir.resolve(),
        port=args.temporal_port,
        ui_port=args.ui_port,
        search_attributes=ALL_KEYS,
    )
    try:
        # The dev server is ours: its address and its only namespace are fixed.
        settings = settings_from(args).model_copy(
            update={"temporal_address": temporal.address, "temporal_namespace": "default"}
        )
    except ValidationError as err:
        _say(f"invalid settings: {describe_invalid(err)}", error=True)
        return 2
    if settings.payload_key is not None:
        endpoint = f"http://{temporal.ip}:{args.codec_port}"
        temporal = dataclasses.replace(temporal, ui_codec_endpoint=endpoint)
    try:
        tracing = build_tracing("kuberay-temporal-dev")
    except TracingConfigError as err:
        _say(f"invalid settings: {err}", error=True)
        return 2
    if settings.log_format == "json":
        configure_logging("json", logging.WARNING)
    try:
        return asyncio.run(
            run_stack(
                temporal,
                settings,
                COMPONENTS,
                args.kube_port,
                args.runtime,
                tracing,
                faults=faults_from(args),
            )
        )
    except _STACK_ERRORS as err:
        _say(str(err), error=True)
        return 1


async def run_stack(
    temporal: DevServerOptions,
    settings: WorkerSettings,
    components: Sequence[Component],
    kube_port: int = 6443,
    runtime: str = "process",
    tracing: Tracing | None = None,
    *,
    faults: Faults | None = None,
) -> int:
    """Start `components` in order, wait for a stop, stop them in reverse order.

    Args:
        temporal: Dev server options.
        settings: Worker settings pointed at the dev server.
        components: The stack, in start order.
        kube_port: Where devcluster serves the Kubernetes API.
        runtime: How devcluster runs pods.
        tracing: Where the stack's traces go; None: nowhere. Flushed once all stopped.
        faults: Faults devcluster injects; None: none.

    Returns:
        0 if stopped by a signal, 1 if a component failed while running.
    """
    with stop_on_signals() as stop:
        stack = DevStack(
            temporal=temporal,
            settings=settings,
            stop=stop,
            kube_port=kube_port,
            runtime=runtime,
            tracing=tracing or Tracing(),
            faults=faults,
        )
        async with AsyncExitStack() as started:
            started.push_async_callback(stack.tracing.shutdown)
            for component in components:
                if stop.is_set():
                    break
                await started.enter_async_context(_announced(component, stack))
            else:
                _say(f"running, state in {temporal.state_dir}; Ctrl-C stops everything")
                for line in stack.running:
                    _say(f"  {line}")
            await stop.wait()
        if stack.failure is not None:
            _say(stack.failure, error=True)
            return 1
        _say("stopped")
        return 0


@asynccontextmanager
async def _announced(component: Component, stack: DevStack) -> AsyncIterator[None]:
    """Run `component`, saying when it starts and stops."""
    _say(f"starting {component.name}")
    async with component.run(stack):
        yield
        _say(f"stopping {component.name}")


def _say(message: str, *, error: bool = False) -> None:
    """Print one line for the person at the terminal."""
    print(f"kuberay-temporal dev: {message}", file=sys.stderr if error else sys.stdout, flush=True)
