"""RayCluster figures: apply → head pod latency, time to ready at scale, memory, history size.

Runs devcluster with its simulated runtime (pods turn Ready after a delay, no processes) as a
subprocess, a Temporal dev server (SQLite in WAL mode, in memory), and the worker and bridge in
this process, then creates N RayClusters of 1 head + 3 workers:

* latency from the create call to the head pod's creation, p50 / p95;
* time until every RayCluster reports `ready`;
* this process's (worker + bridge) memory growth per CR;
* Temporal history events per RayCluster workflow, from a sample of histories.

    python -m benchmarks.raycluster_scale --clusters 1000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.kube import client as kube
from activities.kube.errors import KubeUnavailable
from activities.registry import build_activities
from bridge.running import Bridge
from bridge.signalling import Signaller
from devcluster.ports import free_port
from kuberay_temporal.binaries import temporal_cli
from kuberay_temporal.crd_install import install_crds
from runtime.settings import Settings
from worker.running import build_worker
from worker.search_attributes import ALL_KEYS


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def body(name: str, workers: int = 3) -> dict[str, object]:
    """A RayCluster of a head and `workers` workers (none: no worker group)."""
    container = {"name": "ray", "image": "rayproject/ray:2.60.0"}
    group = {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}}
    spec: dict[str, object] = {"headGroupSpec": group}
    if workers:
        spec["workerGroupSpecs"] = [{"groupName": "w", "replicas": workers, **group}]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


async def head_latencies(
    client: kube.KubeClient, created: dict[str, float], count: int
) -> list[float]:
    """Watch head pods; the first head pod of each cluster ends its latency."""
    selector = "ray.io/node-type=head"
    latencies: dict[str, float] = {}
    _, version = await client.list_versioned(kube.PODS, "default", selector)
    while len(latencies) < count:
        try:
            async for event in client.watch(
                kube.PODS, "default", version, label_selector=selector, timeout_seconds=60
            ):
                obj = event["object"]
                version = obj["metadata"].get("resourceVersion", version)
                cluster = (obj["metadata"].get("labels") or {}).get("ray.io/cluster", "")
                if event["type"] == "ADDED" and cluster in created and cluster not in latencies:
                    latencies[cluster] = time.monotonic() - created[cluster]
                if len(latencies) >= count:
                    break
        except KubeUnavailable:
            _, version = await client.list_versioned(kube.PODS, "default", selector)
    return list(latencies.values())


async def all_ready(client: kube.KubeClient, count: int) -> None:
    while True:  # a benchmark polls at 0.5 s resolution
        items = await client.list_all(kube.RAYCLUSTERS, "default")
        if sum(1 for i in items if (i.get("status") or {}).get("state") == "ready") >= count:
            return
        await asyncio.sleep(0.5)


async def main(count: int, ready_delay: float) -> None:
    state = Path(tempfile.mkdtemp())
    port = free_port()
    devcluster = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        "devcluster",
        "--state-dir",
        str(state),
        "--port",
        str(port),
        "--runtime",
        "simulated",
        "--ready-delay",
        str(ready_delay),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=(state / "devcluster.log").open("wb"),
    )
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        search_attributes=ALL_KEYS,
        data_converter=pydantic_data_converter,
        dev_server_extra_args=["--sqlite-pragma", "journal_mode=wal"],
    )
    try:
        while not (state / "kubeconfig").exists():  # noqa: ASYNC110 - the subprocess writes it
            await asyncio.sleep(0.1)
        client = await kube.connect(str(state / "kubeconfig"))
        await install_crds(client)
        queue = f"bench-{uuid.uuid4()}"
        settings = Settings(task_queue=queue, max_cached_workflows=count + 100)
        baseline = rss_mib()
        async with build_worker(env.client, settings, build_activities(client)):
            bridge = Bridge(client, Signaller(env.client, queue), concurrency=64)
            bridge_task = asyncio.create_task(bridge.run())
            await bridge.wait_listed()
            names = [f"c{i}" for i in range(count)]
            created: dict[str, float] = {}
            latencies = asyncio.create_task(head_latencies(client, created, count))
            started = time.monotonic()
            for name in names:
                created[name] = time.monotonic()
                await client.create(kube.RAYCLUSTERS, "default", body(name))
            applied = time.monotonic() - started
            heads = await latencies
            await all_ready(client, count)
            ready = time.monotonic() - started
            grown = rss_mib() - baseline
            sample = names[:: max(1, count // 20)]
            lengths = []
            for name in sample:
                item = await client.get(kube.RAYCLUSTERS, "default", name)
                workflow_id = f"raycluster/default/{name}/{item['metadata']['uid']}"
                history = await env.client.get_workflow_handle(workflow_id).fetch_history()
                lengths.append(len(history.events))
            bridge_task.cancel()
        heads.sort()
        print(
            f"{count} RayClusters of 1 head + 3 workers "
            f"(simulated pods, Ready after {ready_delay:g}s)"
        )
        print(f"created in {applied:.1f}s; all ready after {ready:.1f}s")
        print(
            f"apply -> head pod created: p50 {statistics.median(heads) * 1000:.0f} ms, "
            f"p95 {heads[int(len(heads) * 0.95) - 1] * 1000:.0f} ms"
        )
        print(f"worker + bridge memory: +{grown:.0f} MiB ({grown * 1024 / count:.0f} KiB per CR)")
        print(
            f"history events per RayCluster workflow (sample of {len(lengths)}): "
            f"median {statistics.median(lengths):.0f}, max {max(lengths)}"
        )
        await client.close()
    finally:
        await env.shutdown()
        devcluster.terminate()
        await devcluster.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--ready-delay", type=float, default=1.0)
    args = parser.parse_args()
    asyncio.run(main(args.clusters, args.ready_delay))
