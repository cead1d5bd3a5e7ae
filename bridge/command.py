"""`kuberay-temporal bridge`: run the watch bridge against a cluster and a Temporal server."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys

from pydantic import ValidationError

from activities.kube.client import connect as connect_kube
from bridge.running import Bridge
from bridge.signalling import Signaller
from runtime.flags import add_listener_flags, listener_overrides
from runtime.health import serving_health
from runtime.logs import configure_logging
from runtime.prometheus import build_telemetry, serving_metrics
from runtime.settings import Settings, describe_invalid
from runtime.telemetry import Tracing, TracingConfigError, build_tracing
from runtime.temporal_client import connect, exit_without_finalizing

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `bridge` subcommand."""
    parser = subparsers.add_parser(
        "bridge",
        help="watch ray.io CRs and turn them into workflows",
        description=(
            "List and watch RayClusters, RayJobs, RayServices and the objects they own, and "
            "signal one Temporal workflow per CR. Settings come from the environment "
            "(KUBECONFIG, TEMPORAL_ADDRESS, KUBERAY_TEMPORAL_WATCH_NAMESPACES, …)."
        ),
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG)")
    add_listener_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the bridge until interrupted."""
    try:
        settings = Settings.from_env()
        given = listener_overrides(args)
        if given:
            settings = Settings.model_validate(settings.model_dump() | given)
    except ValidationError as err:
        print(
            f"kuberay-temporal bridge: invalid settings: {describe_invalid(err)}", file=sys.stderr
        )
        return 2
    if args.kubeconfig:
        settings = settings.model_copy(update={"kubeconfig": args.kubeconfig})
    try:
        tracing = build_tracing("kuberay-temporal-bridge")
    except TracingConfigError as err:
        print(f"kuberay-temporal bridge: invalid settings: {err}", file=sys.stderr)
        return 2
    configure_logging(settings.log_format)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(settings, tracing))
    exit_without_finalizing(0)


async def serve(settings: Settings, tracing: Tracing | None = None) -> None:
    """Connect to both APIs and run the bridge until cancelled, then flush its traces."""
    tracing = tracing or Tracing()
    try:
        await _serve(settings, tracing)
    finally:
        await tracing.shutdown()


async def _serve(settings: Settings, tracing: Tracing) -> None:
    # The probes answer from the start: alive while connecting, ready once all is listed.
    bridges: list[Bridge] = []

    async def listed() -> bool:
        return bool(bridges) and all(w.listed.is_set() for w in bridges[0].watchers)

    async with serving_health(settings.health_port, listed, address=settings.health_address):
        telemetry = build_telemetry(settings.metrics_port, settings.log_format)
        client = await connect(settings, telemetry.runtime, tracing.interceptors())
        kube = await connect_kube(
            settings.kubeconfig, tracing.kube_tracer, settings.kube_rate_limit()
        )
        try:
            signaller = Signaller(client, settings.task_queue, tracing.tracer)
            bridge = Bridge.configured(kube, signaller, settings)
            bridges.append(bridge)
            logger.info(
                "bridge watching %s for %s (feature gates: %s)",
                ", ".join(n or "all namespaces" for n in settings.namespaces),
                ", ".join(target.kind for target in bridge.targets if target.primary),
                settings.feature_gates.text() or "v1.7.0 defaults",
            )
            async with serving_metrics(
                settings.metrics_port,
                telemetry,
                [bridge.gauges.text],
                address=settings.metrics_address,
            ):
                await bridge.run()
        finally:
            await kube.close()
