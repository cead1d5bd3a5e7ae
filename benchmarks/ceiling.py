"""The bare-Temporal reference: what the same server and machine do with lifecycles of no work.

`measure` runs `count` workflows on the Temporal server of the benchmark's stack, each started
by signal-with-start (as the bridge starts ours) and running four activities that do nothing,
one after the other, on a worker of the default settings in the benchmark's process. Its
lifecycles per second are the most a workflow per CR could do here; `benchmarks.scale` prints
ours beside it and the ratio.

`memory_per_workflow` measures what the same lifecycle costs a worker to keep: a worker of its
own process (`python -m benchmarks.ceiling --address … --task-queue …`) runs `count` of them,
each staying open after its activities as a CR's workflow stays open while the CR lives, and
the growth of that process's resident memory is divided by `count`. It is the SDK's own cost of
a cached workflow, which ours cannot go below.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from benchmarks.scale_stack import Child, memory_kib

STEPS = 4
"""Activities per lifecycle: about what a RayCluster lifecycle scheduled before local ones."""

CACHED = 5000
"""The reference worker's sticky cache: our worker's default, so no lifecycle is evicted."""

WARM_UP = 20
"""Lifecycles run before the first memory reading: the worker's first ones load its code."""


@activity.defn(name="ceiling_step")
async def step() -> None:
    """Nothing: the cost measured is Temporal's and the SDK's."""


@workflow.defn(name="CeilingLifecycle", sandboxed=False)
class Lifecycle:
    """`STEPS` activities in sequence, then done (or, told to stay, open until `end`)."""

    def __init__(self) -> None:
        self._stepped = False
        self._ended = False

    @workflow.run
    async def run(self, stay: bool = False) -> None:
        for _ in range(STEPS):
            await workflow.execute_activity(step, start_to_close_timeout=timedelta(seconds=60))
        self._stepped = True
        if stay:
            await workflow.wait_condition(lambda: self._ended)

    @workflow.signal(name="nudge")
    def nudge(self) -> None:
        """What signal-with-start delivers; the lifecycle needs nothing from it."""

    @workflow.signal(name="end")
    def end(self) -> None:
        """Let a lifecycle that stays open finish."""
        self._ended = True

    @workflow.update(name="stepped")
    async def stepped(self) -> None:
        """Returns once the activities are done: how the benchmark waits without polling."""
        await workflow.wait_condition(lambda: self._stepped)


async def measure(client: Client, count: int) -> float:
    """Lifecycles per second for `count` of them started together, until the last is done."""
    queue = f"ceiling-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[Lifecycle], activities=[step]):
        started = time.monotonic()
        handles = await _start(client, queue, range(count), stay=False)
        await asyncio.gather(*(handle.result() for handle in handles))
        return count / (time.monotonic() - started)


async def memory_per_workflow(client: Client, address: str, count: int, log: Path) -> float:
    """KiB of resident memory a worker process grows by per open lifecycle, over `count`."""
    queue = f"memory-{uuid.uuid4().hex[:8]}"
    worker = Child(
        "reference-worker",
        ["--address", address, "--task-queue", queue],
        {},
        log,
        module="benchmarks.ceiling",
    )
    await worker.start()
    try:
        await _open_lifecycles(client, queue, range(WARM_UP))
        before, _ = memory_kib(worker.pid)
        await _open_lifecycles(client, queue, range(WARM_UP, WARM_UP + count))
        after, _ = memory_kib(worker.pid)
        worker.check_alive()
        # Each ends before its worker stops: the benchmark later waits for no workflow to run.
        await asyncio.gather(*(_end(client, f"{queue}-{i}") for i in range(WARM_UP + count)))
    finally:
        await worker.stop()
    return (after - before) / count


async def _open_lifecycles(client: Client, queue: str, indexes: range) -> None:
    """Start the lifecycles (staying open) and return once each has run its activities."""
    handles = await _start(client, queue, indexes, stay=True)
    await asyncio.gather(*(handle.execute_update(Lifecycle.stepped) for handle in handles))


async def _start(
    client: Client, queue: str, indexes: range, stay: bool
) -> list[WorkflowHandle[Lifecycle, None]]:
    """Signal-with-start one lifecycle per index, as the bridge starts ours."""
    return await asyncio.gather(
        *(
            client.start_workflow(
                Lifecycle.run, stay, id=f"{queue}-{i}", task_queue=queue, start_signal="nudge"
            )
            for i in indexes
        )
    )


async def _end(client: Client, workflow_id: str) -> None:
    handle = client.get_workflow_handle(workflow_id)
    await handle.signal(Lifecycle.end)
    await handle.result()


async def _serve(address: str, task_queue: str) -> None:
    client = await Client.connect(address)
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[Lifecycle],
        activities=[step],
        max_cached_workflows=CACHED,
    ):
        await asyncio.Event().wait()  # until SIGTERM or SIGKILL from the benchmark


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="A worker of the reference lifecycle alone.")
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    options = parser.parse_args()
    asyncio.run(_serve(options.address, options.task_queue))
