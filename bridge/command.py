"""`kuberay-temporal bridge`: run the watch bridge against a cluster and a Temporal server."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from pydantic import ValidationError

from activities.kube import connect as connect_kube
from bridge.running import Bridge
from bridge.signalling import Signaller
from worker.client import connect
from worker.settings import WorkerSettings, describe_invalid

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
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the bridge until interrupted."""
    try:
        settings = WorkerSettings.from_env()
    except ValidationError as err:
        print(
            f"kuberay-temporal bridge: invalid settings: {describe_invalid(err)}", file=sys.stderr
        )
        return 2
    if args.kubeconfig:
        settings = settings.model_copy(update={"kubeconfig": args.kubeconfig})
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(serve(settings))
    except KeyboardInterrupt:
        return 0
    return 0


async def serve(settings: WorkerSettings) -> None:
    """Connect to both APIs and run the bridge until cancelled."""
    client = await connect(settings)
    kube = await connect_kube(settings.kubeconfig)
    try:
        bridge = Bridge(
            kube,
            Signaller(client, settings.task_queue),
            namespaces=settings.namespaces,
            relist_period=settings.relist_seconds,
            concurrency=settings.bridge_concurrency,
        )
        logger.info(
            "bridge watching %s", ", ".join(n or "all namespaces" for n in settings.namespaces)
        )
        await bridge.run()
    finally:
        await kube.close()
