"""The `kuberay-temporal worker` subcommand: the worker against an existing server.

This is how the worker runs in a real deployment (and next to a dev server started by
hand): settings come from the environment, flags override them, and SIGINT/SIGTERM drain
it gracefully.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from kubernetes_asyncio.config import ConfigException
from pydantic import ValidationError
from temporalio.service import RPCError
from temporalio.worker import Worker

from activities.kube.client import KubeClient
from activities.kube.client import connect as connect_kube
from activities.registry import duration_series, watching
from runtime.flags import add_listener_flags, listener_overrides
from runtime.health import serving_health
from runtime.logs import configure_logging
from runtime.prometheus import build_telemetry, serving_metrics
from runtime.settings import Settings, describe_invalid
from runtime.telemetry import Tracing, TracingConfigError, build_tracing
from runtime.temporal_client import connect, exit_without_finalizing
from worker.running import (
    build_worker,
    configured_activities,
    dashboards,
    stop_on_signals,
    watching_ray_jobs,
)
from worker.search_attributes import SearchAttributeError, ensure_search_attributes

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `worker` subcommand.

    Args:
        subparsers: The dispatcher's subcommand collection.
    """
    parser = subparsers.add_parser(
        "worker",
        help="run the worker against an existing Temporal server",
        description=(
            "Run every kuberay-temporal workflow and activity on one task queue until "
            "SIGINT or SIGTERM. Defaults come from TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, "
            "KUBERAY_TEMPORAL_TASK_QUEUE and the other KUBERAY_TEMPORAL_* variables."
        ),
    )
    add_connection_flags(parser)
    add_listener_flags(parser)
    parser.set_defaults(handler=run)


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """Add `--address`, `--namespace` and `--task-queue`, which override the environment.

    Args:
        parser: The subcommand's parser.
    """
    parser.add_argument("--address", help="Temporal frontend host:port (env TEMPORAL_ADDRESS)")
    parser.add_argument("--namespace", help="Temporal namespace (env TEMPORAL_NAMESPACE)")
    parser.add_argument("--task-queue", help="task queue to poll (env KUBERAY_TEMPORAL_TASK_QUEUE)")


def settings_from(args: argparse.Namespace) -> Settings:
    """Return the environment's settings with the flags given on the command line applied.

    Args:
        args: Parsed flags; `address`, `namespace`, `task_queue`, `feature_gates` and the
            listener flags (`health_port`, `health_address`, `metrics_port`,
            `metrics_address`) are read if present.

    Returns:
        The settings to run with.

    Raises:
        pydantic.ValidationError: An environment variable or flag has an invalid value.
    """
    flags = {
        "temporal_address": getattr(args, "address", None),
        "temporal_namespace": getattr(args, "namespace", None),
        "task_queue": getattr(args, "task_queue", None),
        "feature_gates": getattr(args, "feature_gates", None),
    }
    overrides = {name: value for name, value in flags.items() if value is not None}
    overrides |= listener_overrides(args)
    settings = Settings.from_env()
    return Settings.model_validate(settings.model_dump() | overrides)


def run(args: argparse.Namespace) -> int:
    """Run the worker until a stop signal, then end the process.

    Args:
        args: Parsed command line.

    Returns:
        Never returns: the process exits with 0 after a clean shutdown, 1 if the worker
        could not start, 2 for bad settings (see `exit_without_finalizing`).
    """
    exit_without_finalizing(_run(args))


def _run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from(args)
    except ValidationError as err:
        print(
            f"kuberay-temporal worker: invalid settings: {describe_invalid(err)}", file=sys.stderr
        )
        return 2
    try:
        tracing = build_tracing("kuberay-temporal-worker")
    except TracingConfigError as err:
        print(f"kuberay-temporal worker: invalid settings: {err}", file=sys.stderr)
        return 2
    configure_logging(settings.log_format)
    try:
        asyncio.run(_serve(settings, tracing))
    except (RuntimeError, RPCError, SearchAttributeError, OSError) as err:
        print(f"kuberay-temporal worker: {err}", file=sys.stderr)
        return 1
    return 0


async def _serve(settings: Settings, tracing: Tracing) -> None:
    try:
        await _serve_traced(settings, tracing)
    finally:
        await tracing.shutdown()


async def _serve_traced(settings: Settings, tracing: Tracing) -> None:
    # The probes answer from the start: alive while connecting, ready once polling.
    running: list[Worker] = []

    async def polling() -> bool:
        return any(worker.is_running and not worker.is_shutdown for worker in running)

    with stop_on_signals() as stop:
        async with serving_health(settings.health_port, polling, address=settings.health_address):
            telemetry = build_telemetry(settings.metrics_port, settings.log_format)
            client = await connect(settings, telemetry.runtime, tracing.interceptors())
            await ensure_search_attributes(client, settings.temporal_namespace)
            kube = await connect_kube_or_none(settings, tracing)
            durations = telemetry.kuberay
            async with (
                watching(kube, settings.namespaces) as copies,
                dashboards(kube, settings, copies) as connector,
                watching_ray_jobs(client, connector, copies),
                serving_metrics(
                    settings.metrics_port,
                    telemetry,
                    [] if durations is None else [duration_series(durations, copies)],
                    address=settings.metrics_address,
                ),
                build_worker(
                    client,
                    settings,
                    configured_activities(kube, settings, durations, copies, connector),
                ) as worker,
            ):
                running.append(worker)
                logger.info(
                    "polling task queue %s on %s (namespace %s; feature gates: %s)",
                    settings.task_queue,
                    settings.temporal_address,
                    settings.temporal_namespace,
                    settings.feature_gates.text() or "v1.7.0 defaults",
                )
                if tracing.enabled:
                    logger.info("exporting traces to %s", ", ".join(tracing.exporters))
                await stop.wait()
            if kube is not None:
                await kube.close()
                logger.info("stopping: draining for up to %s", settings.graceful_shutdown_timeout)


async def connect_kube_or_none(
    settings: Settings, tracing: Tracing | None = None
) -> KubeClient | None:
    """The Kubernetes API from the settings; None (with a warning) when there is none."""
    tracer = tracing.kube_tracer if tracing is not None else None
    try:
        return await connect_kube(settings.kubeconfig, tracer, settings.kube_rate_limit())
    except ConfigException as err:
        logger.warning(
            "no Kubernetes configuration (%s): running without the CR workflows' activities; "
            "set KUBECONFIG or run in a cluster",
            err,
        )
        return None
