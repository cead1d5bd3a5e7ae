"""The `kuberay-temporal devcluster` subcommand: serve devcluster in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from pathlib import Path

from devcluster.faults import Faults
from devcluster.server import DevCluster


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `devcluster` subcommand to the CLI."""
    parser = subparsers.add_parser(
        "devcluster",
        help="serve a local Kubernetes-compatible API server",
        description="Serve a Kubernetes-API-compatible server on loopback, persisted in "
        "SQLite under --state-dir, and write DIR/kubeconfig for kubectl.",
    )
    parser.add_argument("--state-dir", type=Path, required=True, help="where state is kept")
    parser.add_argument("--port", type=int, default=6443, help="port on 127.0.0.1 (0: any)")
    parser.add_argument(
        "--fault-config", type=Path, default=None, help="JSON/YAML fault-injection rules"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; return the exit code."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    faults = Faults.from_file(args.fault_config) if args.fault_config else None
    asyncio.run(_serve(args.state_dir, args.port, faults))
    return 0


async def _serve(state_dir: Path, port: int, faults: Faults | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    cluster = DevCluster(state_dir, port, faults=faults)
    await cluster.start()
    print(f"devcluster serving on {cluster.url}; kubeconfig: {cluster.kubeconfig_path}", flush=True)
    try:
        await stop.wait()
    finally:
        await cluster.stop()
