"""Scale: N RayClusters or RayJobs on the simulated runtime, with one or two worker processes.

Starts the stack of `benchmarks.scale_stack` (devcluster with its simulated runtime and Ray
simulator, the Temporal dev server, one bridge, `--workers` worker processes, all with default
settings), then creates `--count` CRs back to back through the Kubernetes API and watches them:

* apply → ready (RayCluster `status.state`) or apply → Complete (RayJob
  `status.jobDeploymentStatus`) per CR, and the wall time until the last one;
* each worker's resident memory before the first CR and with every CR there (and its peak),
  as KiB per CR; the bridge's, devcluster's and the Temporal server's beside it;
* before the CRs, the bare-Temporal ceiling on the same server (`benchmarks.ceiling`,
  `--ceiling` lifecycles), printed beside our CRs per second with the ratio;
* then deletes every CR and waits until no workflow runs, and counts, over a sample of the
  lifecycles (apply → ready or Complete → delete → workflow closed), the history events and
  the billable actions (`scale_report.count_actions`; a RayJob's lifecycle includes its
  RayCluster's workflow);
* last, what a worker process of its own grows by per bare lifecycle kept open
  (`--memory-reference` of them, `benchmarks.ceiling`), beside our memory per CR with the ratio.

A RayCluster is 1 head + 3 workers (as `benchmarks.raycluster_scale`); a RayJob is a head-only
cluster whose entrypoint is `sleep --job-seconds` (the Ray simulator runs it that long) in
`--mode` HTTPMode or K8sJobMode, with `shutdownAfterJobFinishes` and
`ttlSecondsAfterFinished: 0`, so Complete is followed by the cluster's deletion.

Writes `OUT/<kind>-n<count>-w<workers>.csv` (index, name, applied_seconds, latency_seconds),
the printed summary beside it (`.txt`), and re-plots every `OUT/*-n<count>-*.csv` into
`OUT/latency-n<count>.png`, so the four runs below make one figure. The plot needs the `bench`
extra (`pip install -e '.[bench]'`).

The figures in the README come from these commands, run one after another on an otherwise
idle machine:

    python -m benchmarks.scale --kind raycluster --count 1000 --workers 1
    python -m benchmarks.scale --kind raycluster --count 1000 --workers 2
    python -m benchmarks.scale --kind rayjob --count 1000 --workers 1
    python -m benchmarks.scale --kind rayjob --count 1000 --workers 2

Long jobs beside short ones (the shape of a cluster of training jobs): `--running 1000` applies
1,000 RayJobs of `--running-seconds` (an hour by default; half HTTPMode, half K8sJobMode) and
waits until Ray runs each before the measured CRs, which then come and go beside them:

    python -m benchmarks.scale --kind rayjob --count 1000 --running 1000 --job-seconds 5

A quick check of the harness: the same with `--count 20`. Memory per CR includes the worker's
warm-up (its first workflows load the sandbox's modules), so it means something only at large
counts; on a machine doing other work the latencies measure that work too (the summary notes the
load average at the start).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from temporalio.client import Client

from activities.kube import client as kube
from activities.kube.errors import KubeGone, KubeUnavailable
from benchmarks.ceiling import measure as measure_ceiling
from benchmarks.ceiling import memory_per_workflow
from benchmarks.scale_report import (
    Latencies,
    Sample,
    Summary,
    count_actions,
    event_kind,
    format_summary,
    plot,
    read_csv,
    write_csv,
)
from benchmarks.scale_stack import Stack, memories, running_stack

NAMESPACE = "default"
RESOURCES = {"raycluster": kube.RAYCLUSTERS, "rayjob": kube.RAYJOBS}
WORKFLOW_KIND = {"raycluster": "RayCluster", "rayjob": "RayJob"}
PREFIX = {"raycluster": "rc", "rayjob": "rj"}
IMAGE = "rayproject/ray:2.60.0"


def raycluster_body(name: str) -> dict[str, Any]:
    """A RayCluster of 1 head + 3 workers."""
    container = {"name": "ray", "image": IMAGE}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [container]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "w",
                    "replicas": 3,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [container]}},
                }
            ],
        },
    }


def rayjob_body(name: str, mode: str, job_seconds: float) -> dict[str, Any]:
    """A RayJob on a head-only cluster whose (simulated) Ray job runs `job_seconds`."""
    container = {"name": "ray-head", "image": IMAGE}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "submissionMode": mode,
            "entrypoint": f"sleep {job_seconds:g}",
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 0,
            "rayClusterSpec": {
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [container]}},
                }
            },
        },
    }


def running(kind: str, obj: dict[str, Any]) -> str | None:
    """`done` once a RayJob runs and Ray says so, `failed` if it ended or failed first."""
    status = obj.get("status") or {}
    state = status.get("jobDeploymentStatus")
    if state == "Running" and status.get("jobStatus") == "RUNNING":
        return "done"
    return "failed" if state in ("Complete", "Failed", "ValidationFailed") else None


def outcome(kind: str, obj: dict[str, Any]) -> str | None:
    """`done` once ready / Complete, `failed` on a terminal failure, else None."""
    status = obj.get("status") or {}
    if kind == "raycluster":
        return "done" if status.get("state") == "ready" else None
    state = status.get("jobDeploymentStatus")
    if state == "Complete":
        return "done"
    return "failed" if state in ("Failed", "ValidationFailed") else None


class Finishes:
    """Watches one kind and notes when each expected CR first reaches its outcome."""

    def __init__(
        self,
        client: kube.KubeClient,
        kind: str,
        names: set[str],
        reached: Callable[[str, dict[str, Any]], str | None] = outcome,
    ) -> None:
        self.client, self.kind, self.names, self.reached = client, kind, names, reached
        self.at: dict[str, float] = {}
        self.failed: dict[str, str] = {}
        self.clusters: dict[str, str] = {}
        """A RayJob's RayCluster name, for its lifecycle's histories."""

    def _see(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name not in self.names or name in self.at or name in self.failed:
            return
        cluster = (obj.get("status") or {}).get("rayClusterName")
        if cluster:
            self.clusters[name] = cluster
        result = self.reached(self.kind, obj)
        if result == "done":
            self.at[name] = time.monotonic()
        elif result == "failed":
            self.failed[name] = str((obj.get("status") or {}).get("message", ""))[:200]

    def finished(self) -> bool:
        return len(self.at) + len(self.failed) >= len(self.names)

    async def run(self) -> None:
        """Until every expected CR got there or failed (cancel it to stop earlier)."""
        resource = RESOURCES[self.kind]
        while not self.finished():
            items, version = await self.client.list_versioned(resource, NAMESPACE)
            for item in items:
                self._see(item)
            try:
                async for event in self.client.watch(
                    resource, NAMESPACE, version, timeout_seconds=60
                ):
                    obj = event["object"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._see(obj)
                    if self.finished():
                        return
            except (KubeGone, KubeUnavailable):
                continue  # list again


async def apply_all(
    client: kube.KubeClient, bodies: list[dict[str, Any]]
) -> tuple[float, dict[str, float]]:
    """Create every CR back to back; when each create call began (monotonic clock)."""
    applied: dict[str, float] = {}
    started = time.monotonic()
    for body in bodies:
        name = body["metadata"]["name"]
        applied[name] = time.monotonic()
        await client.create(RESOURCES[body["kind"].lower()], NAMESPACE, body)
    return started, applied


async def start_long_jobs(stack: Stack, names: list[str], args: argparse.Namespace) -> str:
    """Apply `names` as long RayJobs, half HTTPMode, half K8sJobMode; wait until Ray runs each.

    Returns the summary's note on them.
    """
    modes = ("HTTPMode", "K8sJobMode")
    bodies = [rayjob_body(n, modes[i % 2], args.running_seconds) for i, n in enumerate(names)]
    runs = Finishes(stack.kube, "rayjob", set(names), reached=running)
    watching = asyncio.create_task(runs.run())
    started, _ = await apply_all(stack.kube, bodies)
    try:
        await asyncio.wait_for(asyncio.shield(watching), args.timeout)
    except TimeoutError:
        watching.cancel()
    took = time.monotonic() - started
    note = (
        f"beside {len(names)} RayJobs of {args.running_seconds:g} s (half HTTPMode, half "
        f"K8sJobMode), applied first: {len(runs.at)} running {took:.1f} s after the first apply"
    )
    if runs.failed:
        note += f"; {len(runs.failed)} ended or failed first"
    return note


async def delete_all(
    stack: Stack, kind: str, names: list[str], within: float, long_names: Sequence[str] = ()
) -> float | None:
    """Delete every CR; seconds until no workflow runs (None: some still ran after `within`).

    `long_names`: RayJobs applied before the measured CRs, deleted with them.
    """
    started = time.monotonic()
    for name in names:
        await stack.kube.delete(RESOURCES[kind], NAMESPACE, name)
    for name in long_names:
        await stack.kube.delete(kube.RAYJOBS, NAMESPACE, name)
    while time.monotonic() - started < within:
        left = await stack.temporal.count_workflows('ExecutionStatus = "Running"')
        if left.count == 0:
            return time.monotonic() - started
        await asyncio.sleep(1.0)
    return None


async def lifecycle_counts(temporal: Client, queries: list[str]) -> Counter[str]:
    """`count_actions` summed over every run of every workflow the queries find."""
    total: Counter[str] = Counter()
    for query in queries:
        async for execution in temporal.list_workflows(query):
            run = temporal.get_workflow_handle(execution.id, run_id=execution.run_id)
            events = []
            async for event in run.fetch_history_events():
                marker = event.marker_recorded_event_attributes.marker_name
                kind = event_kind(event.WhichOneof("attributes") or "", marker)
                attempt = event.activity_task_started_event_attributes.attempt
                events.append((kind, attempt))
            total.update(count_actions(events))
    return total


def lifecycle_queries(kind: str, name: str, cluster: str | None) -> list[str]:
    """Visibility queries for the workflows of one CR's lifecycle."""

    def query(ray_kind: str, ray_name: str) -> str:
        return f'RayKind = "{ray_kind}" AND RayNamespace = "{NAMESPACE}" AND RayName = "{ray_name}"'

    queries = [query(WORKFLOW_KIND[kind], name)]
    if cluster:
        queries.append(query("RayCluster", cluster))
    return queries


def sample_names(names: list[str], size: int) -> list[str]:
    """`size` names spread evenly over the apply order."""
    step = max(1, len(names) // max(1, size))
    return names[::step][:size]


def output_paths(
    out: Path, kind: str, count: int, workers: int, running: int = 0
) -> tuple[Path, Path, Path]:
    """The run's CSV, its summary text, and the plot shared by runs of this count.

    A run beside `running` long jobs is named for them (`-r<running>`), so it never replaces
    the run of the same count without them.
    """
    beside = f"-r{running}" if running else ""
    stem = f"{kind}-n{count}{beside}-w{workers}"
    return out / f"{stem}.csv", out / f"{stem}.txt", out / f"latency-n{count}.png"


def replot(out: Path, count: int, png: Path) -> None:
    """Plot every run of `count` CRs kept in `out` into one figure."""
    series: dict[str, list[Sample]] = {}
    for csv_path in sorted(out.glob(f"*-n{count}-*w*.csv")):
        kind, _, *beside, workers = csv_path.stem.split("-")
        label = f"{kind}, {workers[1:]} worker{'s' if workers != 'w1' else ''}"
        if beside:
            label += f", beside {beside[0][1:]} running"
        series[label] = read_csv(csv_path)
    plot(series, png, f"Apply → ready / Complete, {count} CRs, simulated runtime")


async def run(args: argparse.Namespace) -> tuple[Summary, list[Sample]]:
    """One benchmark run: its summary and per-CR samples (`main` writes the files)."""
    names = [f"{PREFIX[args.kind]}{i:04d}" for i in range(args.count)]
    if args.kind == "raycluster":
        bodies = [raycluster_body(n) for n in names]
    else:
        bodies = [rayjob_body(n, args.mode, args.job_seconds) for n in names]
    command = shlex.join(["python", "-m", "benchmarks.scale", *sys.argv[1:]])
    load = os.getloadavg()
    notes = [
        f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} at the start; "
        f"simulated pods Ready after {args.ready_delay:g} s"
        + (f"; Ray jobs run {args.job_seconds:g} s in {args.mode}" if args.kind == "rayjob" else "")
    ]
    state = Path(tempfile.mkdtemp(prefix="kuberay-scale-"))
    long_names = [f"lr{i:04d}" for i in range(args.running)]
    async with running_stack(state, args.workers, args.ready_delay) as stack:
        ceiling = None
        if args.ceiling:
            ceiling = (args.ceiling, await measure_ceiling(stack.temporal, args.ceiling))
        if long_names:
            notes.append(await start_long_jobs(stack, long_names, args))
        before = stack.memory(stack.workers)
        others_before = [*stack.memory(stack.others), stack.server_now()]
        finishes = Finishes(stack.kube, args.kind, set(names))
        watching = asyncio.create_task(finishes.run())
        started, applied = await apply_all(stack.kube, bodies)
        applied_in = time.monotonic() - started
        try:
            await asyncio.wait_for(asyncio.shield(watching), args.timeout)
        except TimeoutError:
            watching.cancel()
            notes.append(f"stopped waiting after {args.timeout:g} s")
        after = stack.memory(stack.workers)
        others_after = [*stack.memory(stack.others), stack.server_now()]
        samples = [
            Sample(
                index=i,
                name=n,
                applied=applied[n] - started,
                latency=finishes.at[n] - applied[n] if n in finishes.at else None,
            )
            for i, n in enumerate(names)
        ]
        for name, message in list(finishes.failed.items())[:5]:
            notes.append(f"failed: {name}: {message}")
        deleted_in = await delete_all(stack, args.kind, names, args.timeout, long_names)
        lifecycles = [
            await lifecycle_counts(
                stack.temporal, lifecycle_queries(args.kind, n, finishes.clusters.get(n))
            )
            for n in sample_names(names, args.sample)
        ]
        reference = None  # last: its workflows must not load the server under ours
        if args.memory_reference:
            address = stack.temporal.service_client.config.target_host
            kib = await memory_per_workflow(
                stack.temporal, address, args.memory_reference, state / "reference.log"
            )
            reference = (args.memory_reference, kib)
    if args.keep_state:
        notes.append(f"logs and state kept in {state}")
    else:
        shutil.rmtree(state, ignore_errors=True)
    summary = Summary(
        kind=args.kind,
        count=args.count,
        workers=args.workers,
        command=command,
        applied_in=applied_in,
        latencies=Latencies.of(samples),
        workers_memory=memories(before, after),
        others_memory=memories(others_before, others_after),
        lifecycles=lifecycles,
        deleted_in=deleted_in,
        notes=notes,
        ceiling=ceiling,
        reference_memory=reference,
    )
    return summary, samples


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kind", choices=sorted(RESOURCES), required=True)
    parser.add_argument("--count", type=int, default=1000, help="CRs to create")
    parser.add_argument("--workers", type=int, choices=(1, 2), default=1, help="worker processes")
    parser.add_argument("--mode", choices=("HTTPMode", "K8sJobMode"), default="HTTPMode")
    parser.add_argument("--job-seconds", type=float, default=1.0, help="simulated Ray job run")
    parser.add_argument(
        "--running",
        type=int,
        default=0,
        help="long RayJobs applied first, running while the CRs are measured",
    )
    parser.add_argument(
        "--running-seconds", type=float, default=3600.0, help="how long their Ray jobs run"
    )
    parser.add_argument("--ready-delay", type=float, default=1.0, help="simulated pod start")
    parser.add_argument("--sample", type=int, default=20, help="lifecycles whose history counts")
    parser.add_argument(
        "--ceiling", type=int, default=500, help="bare-Temporal lifecycles first (0: none)"
    )
    parser.add_argument(
        "--memory-reference",
        type=int,
        default=1000,
        help="bare-Temporal lifecycles kept open by a worker process of their own (0: none)",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per phase")
    parser.add_argument("--out", type=Path, default=Path("docs/scale"), help="output directory")
    parser.add_argument("--keep-state", action="store_true", help="keep the logs and databases")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run, print the summary, write the CSV, the summary and the plot."""
    args = parse_args(argv)
    summary, samples = asyncio.run(run(args))
    text = format_summary(summary)
    print(text)
    csv_path, txt_path, png = output_paths(
        args.out, args.kind, args.count, args.workers, args.running
    )
    write_csv(samples, csv_path)
    txt_path.write_text(text + "\n")
    replot(args.out, args.count, png)
    print(f"wrote {csv_path}, {txt_path} and {png}")


if __name__ == "__main__":
    main()
