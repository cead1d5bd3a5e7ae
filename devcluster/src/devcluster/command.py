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
    parser.add_argument(
        "--pod-api",
        choices=("on", "off"),
        default="on",
        help="process runtime: serve the API to pods over HTTPS on the pod network (on, the "
        "default; with no authentication, so pod code may change anything) or not (off: "
        "in-cluster clients such as the Ray autoscaler then fail)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; return the exit code."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    faults = faults_from(args)
    try:
        asyncio.run(_serve(args, faults))
    except RuntimeUnavailable as err:
        print(f"devcluster: {err}", file=sys.stderr)
        return 2
    return 0


def cluster_from(args: argparse.Namespace, faults: Faults | None) -> DevCluster:
    """The DevCluster the options describe (not started)."""
    return DevCluster(
        args.state_dir,
        args.port,
        faults=faults,
        runtime=args.runtime,
        ready_delay=args.ready_delay,
        pod_network=args.runtime == "process",
        pod_api=args.pod_api == "on",
    )


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


async def _serve(args: argparse.Namespace, faults: Faults | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    cluster = cluster_from(args, faults)
    await cluster.start()
    print(f"devcluster serving on {cluster.url}; kubeconfig: {cluster.kubeconfig_path}", flush=True)
    try:
        await stop.wait()
    finally:
        await cluster.stop()
