"""The `kuberay-temporal devcluster` subcommand: serve devcluster in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

from devcluster.faults import SEED_ENV, Faults
from devcluster.kubelet import RUNTIMES, RuntimeUnavailable
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
    parser.add_argument(
        "--fault-rate",
        type=float,
        default=None,
        help="inject the standard faults (500s, 429s, 409s, latency, cut watches; dashboard "
        "500s, timeouts, dropped connections) into this share of requests, e.g. 0.2 (env "
        "DEVCLUSTER_FAULT_RATE; with --fault-config, that file wins)",
    )
    parser.add_argument(
        "--fault-seed",
        type=int,
        default=None,
        help="seed of --fault-rate's draws (env DEVCLUSTER_FAULT_SEED)",
    )
    parser.add_argument(
        "--runtime",
        choices=RUNTIMES,
        default="process",
        help="how pods run: process (local processes, needs root) or simulated (no processes, "
        "pods Ready after --ready-delay; for scale benchmarks)",
    )
    parser.add_argument(
        "--ready-delay", type=float, default=1.0, help="simulated runtime: seconds to Ready"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; return the exit code."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    faults = faults_from(args)
    try:
        asyncio.run(_serve(args.state_dir, args.port, faults, args.runtime, args.ready_delay))
    except RuntimeUnavailable as err:
        print(f"devcluster: {err}", file=sys.stderr)
        return 2
    return 0


def faults_from(args: argparse.Namespace) -> Faults | None:
    """The faults the options ask for: a config file, else a rate, else the environment."""
    if getattr(args, "fault_config", None):
        return Faults.from_file(args.fault_config)
    if args.fault_rate is not None:
        return Faults.at_rate(args.fault_rate, args.fault_seed) if args.fault_rate else None
    env = dict(os.environ)
    if args.fault_seed is not None:
        env[SEED_ENV] = str(args.fault_seed)
    return Faults.from_env(env)


async def _serve(
    state_dir: Path, port: int, faults: Faults | None, runtime: str, ready_delay: float
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    cluster = DevCluster(
        state_dir,
        port,
        faults=faults,
        runtime=runtime,
        ready_delay=ready_delay,
        pod_network=runtime == "process",
    )
    await cluster.start()
    print(f"devcluster serving on {cluster.url}; kubeconfig: {cluster.kubeconfig_path}", flush=True)
    try:
        await stop.wait()
    finally:
        await cluster.stop()
