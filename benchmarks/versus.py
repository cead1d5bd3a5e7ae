"""Head to head: the same N CRs reconciled by KubeRay's own operator, then by ours.

Each operator gets a fresh stack on the same programs: the real control plane (kube-apiserver,
etcd, controller manager and scheduler v1.37.2 built from Go modules) with devcluster's kubelet
and its simulated runtime as the node (`benchmarks.versus_node`, a process of its own). First
KubeRay v1.7.0 (built from its source archive, `devcluster.control_plane.kuberay`) reconciles
namespace `default`; then, on a new stack, our worker, bridge and Temporal dev server (each a
process, as in `benchmarks.scale_stack`, authenticating as deploy/'s ServiceAccounts). Both reach
Ray dashboards through the API server's service proxy. The CRs are `benchmarks.scale`'s: a
RayCluster of 1 head + 3 workers, or a RayJob on a head-only cluster whose simulated Ray job runs
`--job-seconds` in HTTPMode, with its cluster deleted once Complete. For each run:

* the time from the first apply until all are ready (RayCluster `status.state`) or Complete
  (RayJob `jobDeploymentStatus`), and apply → ready/Complete p50, p95 and p99;
* each operator process's CPU seconds spent during the run and its peak RSS (ours: worker,
  bridge and Temporal server, each shown), and the control plane's CPU beside them;
* API requests per CR: every client's (the growth of the API server's
  `apiserver_request_total`), the operator's own, and each other client's (the API server's
  audit log, counted by user).

Prints one table whose last line is `ratio apply->ready p50 kuberay-temporal/kuberay: X.XX`,
writes it to `OUT/versus-<kind>-n<count>.txt`, each run's per-CR CSV beside it, and a plot of
both runs on the same axes (`OUT/versus-<kind>-n<count>.png`, with the `bench` extra). The
README's figures:

    python -m benchmarks.versus --kind raycluster --count 1000
    python -m benchmarks.versus --kind rayjob --count 1000

Both need the control plane and KubeRay built (`make install`) and root (the node's pod network,
through which the API server proxies to the simulated dashboards).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import ssl
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from activities.kube import client as kube
from benchmarks.scale import (
    IMAGE,
    PREFIX,
    Finishes,
    apply_all,
    raycluster_body,
    rayjob_body,
)
from benchmarks.scale_report import Sample, plot, write_csv
from benchmarks.scale_stack import (
    STARTUP_SECONDS,
    Child,
    cpu_seconds,
    memory_kib,
    raise_open_files_limit,
    wait_ready,
)
from benchmarks.versus_report import (
    KUBERAY,
    OURS,
    Process,
    Run,
    audit_counts,
    audit_lines,
    format_table,
    request_total,
)
from devcluster.control_plane.building import (
    KUBERAY_OPERATOR,
    KUBERAY_VERSION,
    build,
    default_build,
)
from devcluster.control_plane.kuberay import KubeRayOperator
from devcluster.ports import free_port
from kuberay_temporal.binaries import temporal_cli
from kuberay_temporal.temporal_server import DevServer, DevServerOptions
from worker.search_attributes import ALL_KEYS

NAMESPACE = "default"
"""Where `benchmarks.scale`'s CRs go; KubeRay watches only it."""


@dataclass(frozen=True)
class Cluster:
    """What `benchmarks.versus_node` wrote to `cluster.json`."""

    url: str
    admin: Path
    kuberay: Path
    worker: Path
    bridge: Path
    ca: Path
    admin_cert: Path
    admin_key: Path
    audit_log: Path
    pids: dict[str, int]

    @classmethod
    def read(cls, path: Path) -> Cluster:
        data = json.loads(path.read_text())
        paths = {k: Path(v) for k, v in data.items() if k not in ("url", "pids")}
        return cls(url=data["url"], pids=data["pids"], **paths)

    async def metrics(self) -> str:
        """The API server's /metrics text, read as the admin."""
        tls = ssl.create_default_context(cafile=str(self.ca))
        tls.load_cert_chain(str(self.admin_cert), str(self.admin_key))
        async with httpx.AsyncClient(verify=tls, timeout=30) as client:
            response = await client.get(f"{self.url}/metrics")
        response.raise_for_status()
        return response.text


class Readings:
    """CPU time of a set of processes at the start, so a run's share can be taken at its end."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.start = {label: cpu_seconds(pid) for label, pid in pids.items()}

    def processes(self) -> list[Process]:
        return [
            Process(label, cpu_seconds(pid) - self.start[label], memory_kib(pid)[1])
            for label, pid in self.pids.items()
        ]


@contextlib.asynccontextmanager
async def node(state: Path, ready_delay: float) -> AsyncIterator[tuple[Cluster, int]]:
    """The cluster process, once it has described itself; the node process's id with it."""
    child = Child(
        "node",
        ["--state", str(state), "--ready-delay", str(ready_delay)],
        {},
        state / "node.log",
        module="benchmarks.versus_node",
    )
    described = state / "cluster.json"
    await child.start()
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not described.exists():
            child.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"the node was not up after {STARTUP_SECONDS:g} s")
            await asyncio.sleep(0.2)
        yield Cluster.read(described), child.pid
    finally:
        await child.stop()


@contextlib.asynccontextmanager
async def kuberay_operator(state: Path, cluster: Cluster) -> AsyncIterator[dict[str, int]]:
    """KubeRay's operator reconciling `NAMESPACE`: its process id by label."""
    target = default_build()
    await asyncio.to_thread(build, target, names=(KUBERAY_OPERATOR,))
    binary = target.path(KUBERAY_OPERATOR)
    log = state / "kuberay-operator.log"
    async with KubeRayOperator(binary, cluster.kuberay, [NAMESPACE], log) as operator:
        assert operator.pid is not None
        yield {"kuberay-operator": operator.pid}


@contextlib.asynccontextmanager
async def our_operator(state: Path, cluster: Cluster) -> AsyncIterator[dict[str, int]]:
    """Our worker, bridge and Temporal dev server, each a process: their ids by label."""
    options = DevServerOptions(
        state_dir=state / "temporal",
        port=free_port(),
        ui_port=free_port(),
        search_attributes=ALL_KEYS,
    )
    async with DevServer(temporal_cli(), options) as server, contextlib.AsyncExitStack() as stack:
        started = []
        for label, kubeconfig in (("worker", cluster.worker), ("bridge", cluster.bridge)):
            port = free_port()
            env = {"TEMPORAL_ADDRESS": options.address, "KUBECONFIG": str(kubeconfig)}
            child = Child(label, [label, "--health-port", str(port)], env, state / f"{label}.log")
            stack.push_async_callback(child.stop)
            await child.start()
            started.append((child, port))
        for child, port in started:
            await wait_ready(child, port)
        assert server.pid is not None
        yield {"worker": started[0][0].pid, "bridge": started[1][0].pid, "temporal": server.pid}


OPERATORS = {KUBERAY: kuberay_operator, OURS: our_operator}


async def run_one(operator: str, args: argparse.Namespace, bodies: list[dict[str, Any]]) -> Run:
    """One operator's run on a fresh stack (its state removed afterwards unless kept)."""
    state = Path(tempfile.mkdtemp(prefix=f"kuberay-versus-{operator}-"))
    names = [b["metadata"]["name"] for b in bodies]
    try:
        async with (
            node(state, args.ready_delay) as (cluster, node_pid),
            OPERATORS[operator](state, cluster) as pids,
        ):
            client = await kube.connect(str(cluster.admin))
            try:
                shared_pids = {**cluster.pids, "node": node_pid}
                own, shared = Readings(pids), Readings(shared_pids)
                requests_before = request_total(await cluster.metrics())
                since = datetime.now(UTC)
                finishes = Finishes(client, args.kind, set(names))
                watching = asyncio.create_task(finishes.run())
                started, applied = await apply_all(client, bodies)
                try:
                    await asyncio.wait_for(asyncio.shield(watching), args.timeout)
                except TimeoutError:
                    watching.cancel()
                operator_processes, shared_processes = own.processes(), shared.processes()
                requests_total = request_total(await cluster.metrics()) - requests_before
                until = datetime.now(UTC)
            finally:
                await client.close()
        # by time, over every part: a long run's log may have been rotated under us
        requests = audit_counts(audit_lines(cluster.audit_log), since, until)
    finally:
        if args.keep_state:
            print(f"{operator}: logs and state kept in {state}", file=sys.stderr)
        else:
            shutil.rmtree(state, ignore_errors=True)
    samples = [
        Sample(
            index=i,
            name=n,
            applied=applied[n] - started,
            latency=finishes.at[n] - applied[n] if n in finishes.at else None,
        )
        for i, n in enumerate(names)
    ]
    return Run(operator, samples, operator_processes, shared_processes, requests_total, requests)


def bodies_of(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The CRs both operators get, in apply order."""
    names = [f"{PREFIX[args.kind]}{i:04d}" for i in range(args.count)]
    if args.kind == "raycluster":
        return [raycluster_body(n) for n in names]
    return [rayjob_body(n, "HTTPMode", args.job_seconds) for n in names]


def describe(args: argparse.Namespace) -> tuple[str, list[str]]:
    """The table's title and notes."""
    what = (
        "RayClusters (1 head + 3 workers) to ready"
        if args.kind == "raycluster"
        else f"HTTPMode RayJobs (simulated job of {args.job_seconds:g} s) to Complete"
    )
    title = (
        f"{args.count} {what}, KubeRay {KUBERAY_VERSION} vs kuberay-temporal, each on a fresh "
        "real control plane with the simulated runtime"
    )
    load = os.getloadavg()
    command = shlex.join(["python", "-m", "benchmarks.versus", *sys.argv[1:]])
    notes = [
        f"command: {command}",
        f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} at the end; image {IMAGE}; "
        f"simulated pods Ready after {args.ready_delay:g} s",
    ]
    return title, notes


async def run(args: argparse.Namespace) -> tuple[Run, Run]:
    """KubeRay's run, then ours."""
    raise_open_files_limit()
    bodies = bodies_of(args)
    theirs = await run_one(KUBERAY, args, bodies)
    ours = await run_one(OURS, args, bodies)
    return theirs, ours


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kind", choices=("raycluster", "rayjob"), required=True)
    parser.add_argument("--count", type=int, default=1000, help="CRs to create")
    parser.add_argument("--job-seconds", type=float, default=1.0, help="simulated Ray job run")
    parser.add_argument("--ready-delay", type=float, default=1.0, help="simulated pod start")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait per run")
    parser.add_argument("--out", type=Path, default=Path("docs/scale"), help="output directory")
    parser.add_argument("--keep-state", action="store_true", help="keep the logs and databases")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run both, print the table, write it, the CSVs and the plot."""
    args = parse_args(argv)
    theirs, ours = asyncio.run(run(args))
    title, notes = describe(args)
    text = format_table(title, theirs, ours, notes)
    print(text)
    stem = args.out / f"versus-{args.kind}-n{args.count}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".txt").write_text(text + "\n")
    for result in (theirs, ours):
        write_csv(
            result.samples, args.out / f"versus-{args.kind}-n{args.count}-{result.operator}.csv"
        )
    plot(
        {f"KubeRay {KUBERAY_VERSION}": theirs.samples, "kuberay-temporal": ours.samples},
        stem.with_suffix(".png"),
        f"Apply → {'ready' if args.kind == 'raycluster' else 'Complete'}, {args.count} "
        f"{'RayClusters' if args.kind == 'raycluster' else 'RayJobs'}, same control plane",
    )


if __name__ == "__main__":
    main()
