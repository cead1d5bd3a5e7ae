"""Bridge figures: watch-to-signal throughput and the re-list after a restart.

Runs devcluster (in this process), a real Temporal dev server (in-memory) and a worker of
stand-in workflows (the CR workflows minus reconciling), then:

1. re-list: N RayClusters exist before the bridge starts; time until its first list is done,
   and until every CR's workflow has been started and signalled;
2. throughput: with the bridge running, change every CR's spec once; events per second from
   the first change until every workflow knows the new generation.

    python -m benchmarks.bridge_throughput --crs 10000
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.kube import client as kube
from bridge.running import Bridge
from bridge.signalling import Signaller
from devcluster.server import DevCluster
from kuberay_temporal.binaries import temporal_cli
from kuberay_temporal.crd_install import install_crds
from tests.bridge.standin import STAND_INS
from worker.running import build_workflow_runner
from worker.search_attributes import ALL_KEYS


def cluster(name: str) -> dict[str, object]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {}}},
    }


async def create_all(client: kube.KubeClient, names: list[str], writers: int = 16) -> None:
    queue: asyncio.Queue[str] = asyncio.Queue()
    for name in names:
        queue.put_nowait(name)

    async def writer() -> None:
        while not queue.empty():
            await client.create(kube.RAYCLUSTERS, "default", cluster(queue.get_nowait()))

    await asyncio.gather(*(writer() for _ in range(writers)))


async def bump_all(client: kube.KubeClient, names: list[str], writers: int = 16) -> None:
    queue: asyncio.Queue[str] = asyncio.Queue()
    for name in names:
        queue.put_nowait(name)

    async def writer() -> None:
        while not queue.empty():
            patch = {"spec": {"rayVersion": "2.60.0"}}
            await client.patch(kube.RAYCLUSTERS, "default", queue.get_nowait(), patch)

    await asyncio.gather(*(writer() for _ in range(writers)))


async def settle(bridge: Bridge, expected_sent: int) -> None:
    """Poll the bridge's counters (a benchmark measures; 50 ms is the resolution)."""
    while bridge.signaller.sent < expected_sent or not bridge.coalescer.idle:  # noqa: ASYNC110
        await asyncio.sleep(0.05)


async def main(count: int) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        search_attributes=ALL_KEYS,
        data_converter=pydantic_data_converter,
        dev_server_extra_args=["--sqlite-pragma", "journal_mode=wal"],
    )
    queue = f"bench-{uuid.uuid4()}"
    with tempfile.TemporaryDirectory() as state:
        async with (
            DevCluster(Path(state)) as devcluster,
            Worker(
                env.client,
                task_queue=queue,
                workflows=STAND_INS,
                workflow_runner=build_workflow_runner(),
                max_cached_workflows=count + 100,
            ),
        ):
            client = await kube.connect(str(devcluster.kubeconfig_path))
            await install_crds(client)
            names = [f"c{i}" for i in range(count)]
            started = time.monotonic()
            await create_all(client, names)
            print(f"created {count} RayClusters in {time.monotonic() - started:.1f}s")

            signaller = Signaller(env.client, queue)
            bridge = Bridge(client, signaller, window=0.05, concurrency=64)
            task = asyncio.create_task(bridge.run())
            started = time.monotonic()
            await bridge.wait_listed()
            listed = time.monotonic() - started
            await settle(bridge, count)
            signalled = time.monotonic() - started
            print(
                f"re-list of {count} CRs: listed in {listed:.2f}s, "
                f"every workflow started and signalled in {signalled:.1f}s "
                f"({count / signalled:.0f} CRs/s)"
            )

            before = signaller.sent
            started = time.monotonic()
            await bump_all(client, names)
            written = time.monotonic() - started
            await settle(bridge, before + count)
            total = time.monotonic() - started
            print(
                f"{count} spec changes written in {written:.1f}s; all signalled after "
                f"{total:.1f}s: {count / total:.0f} events/s from watch to signal"
            )
            task.cancel()
            await client.close()
    await env.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crs", type=int, default=10_000)
    asyncio.run(main(parser.parse_args().crs))
