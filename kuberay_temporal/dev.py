"""`kuberay-temporal dev`: the embedded local stack, in the foreground, state in one directory.

The stack (`kuberay_temporal.dev_stack`) is devcluster (or, with `--control-plane kubernetes`, a
real control plane whose node is devcluster's kubelet) with our CRDs installed, the codec server
when payloads are encrypted (so the web UI shows them decrypted), the Temporal dev server, the
worker and the bridge, started in that order and stopped in reverse. Ctrl-C or SIGTERM stops
them all; the worker drains before the server goes. The state directory keeps the SQLite
database, so a second start continues where the first stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from pydantic import ValidationError
from temporalio.service import RPCError

from crds.validation.names import dns1123_label_problem
from devcluster.command import faults_from
from devcluster.control_plane.building import KUBERAY_VERSION
from devcluster.faults import Faults
from devcluster.kubelet import RUNTIMES, RuntimeUnavailable
from kuberay_temporal.binaries import BinaryNotFoundError
from kuberay_temporal.dev_stack import CONTROL_PLANES, KUBERAY_COMPONENT, Component, DevStack
from kuberay_temporal.temporal_server import DevServerError, DevServerOptions
from runtime.codec import PAYLOAD_KEY_VARIABLE
from runtime.logs import configure_logging
from runtime.settings import Settings, describe_invalid
from runtime.telemetry import Tracing, TracingConfigError, build_tracing
from runtime.temporal_client import exit_without_finalizing
from worker.codec_server import DEFAULT_PORT as DEFAULT_CODEC_PORT
from worker.command import settings_from
from worker.running import stop_on_signals
from worker.search_attributes import ALL_KEYS, SearchAttributeError

# Errors that mean "the stack could not run"; reported in one line, exit code 1.
_STACK_ERRORS = (
    BinaryNotFoundError,
    DevServerError,
    SearchAttributeError,
    RPCError,
    RuntimeError,
    RuntimeUnavailable,
)


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
        "--control-plane",
        choices=sorted(CONTROL_PLANES),
        default="devcluster",
        help="the Kubernetes API: devcluster's own (default; nothing to build) or a real "
        "kube-apiserver, etcd, controller manager and scheduler v1.37.2 built from Go "
        "modules on first use, with devcluster's kubelet as the node",
    )
    parser.add_argument(
        "--kuberay-namespace",
        metavar="NS",
        help="with --control-plane kubernetes, also run KubeRay's own operator "
        f"{KUBERAY_VERSION} (built from its source archive on first use) reconciling only NS, "
        "which our bridge then leaves alone: the two side by side on one API server",
    )
    parser.add_argument(
        "--kubelet-port",
        type=int,
        default=10250,
        help="with --control-plane kubernetes, the node's kubelet API port (default 10250)",
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
    parser.add_argument(
        "--feature-gates",
        metavar="GATES",
        help="KubeRay's feature gates, e.g. RayCronJob=true (env KUBERAY_TEMPORAL_FEATURE_GATES; "
        "default v1.7.0's); KubeRay's operator of --kuberay-namespace gets the same",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the stack until a stop signal, then end the process.

    Args:
        args: Parsed command line.

    Returns:
        Never returns: the process exits with 0 after a clean stop, 1 if a component
        failed, 2 for bad settings (see `runtime.temporal_client.exit_without_finalizing`).
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
    components = list(CONTROL_PLANES[args.control_plane])
    if args.kuberay_namespace is not None:
        problem = _kuberay_problem(args)
        if problem is not None:
            _say(f"invalid --kuberay-namespace: {problem}", error=True)
            return 2
        ignored = ",".join([settings.ignore_namespaces, args.kuberay_namespace]).strip(",")
        settings = settings.model_copy(update={"ignore_namespaces": ignored})
        components.insert(1, KUBERAY_COMPONENT)  # right after the cluster it runs against
    if settings.payload_key is not None:
        temporal = dataclasses.replace(temporal, ui_codec_port=args.codec_port)
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
                components,
                args.kube_port,
                args.runtime,
                tracing,
                faults=faults_from(args),
                kubelet_port=args.kubelet_port,
                kuberay_namespace=args.kuberay_namespace,
            )
        )
    except _STACK_ERRORS as err:
        _say(str(err), error=True)
        return 1


async def run_stack(
    temporal: DevServerOptions,
    settings: Settings,
    components: Sequence[Component],
    kube_port: int = 6443,
    runtime: str = "process",
    tracing: Tracing | None = None,
    *,
    faults: Faults | None = None,
    kubelet_port: int = 10250,
    kuberay_namespace: str | None = None,
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
        kubelet_port: With a real control plane, the node's kubelet API port.
        kuberay_namespace: The namespace KubeRay's own operator reconciles, if it runs.

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
            kubelet_port=kubelet_port,
            kuberay_namespace=kuberay_namespace,
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


def _kuberay_problem(args: argparse.Namespace) -> str | None:
    """Why KubeRay's operator cannot run beside ours as asked, or None."""
    if args.control_plane != "kubernetes":
        return "KubeRay's operator needs a real API server; add --control-plane kubernetes"
    return dns1123_label_problem(args.kuberay_namespace)


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
