"""The bare-Temporal ceiling: what the same server and machine do with lifecycles of no work.

`measure` runs `count` workflows on the Temporal server of the benchmark's stack, each started
by signal-with-start (as the bridge starts ours) and running four activities that do nothing,
one after the other, on a worker of the default settings in the benchmark's process. Its
lifecycles per second are the most a workflow per CR could do here; `benchmarks.scale` prints
ours beside it and the ratio.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

STEPS = 4
"""Activities per lifecycle: about what a RayCluster lifecycle scheduled before local ones."""


@activity.defn(name="ceiling_step")
async def step() -> None:
    """Nothing: the cost measured is Temporal's and the SDK's."""


@workflow.defn(name="CeilingLifecycle", sandboxed=False)
class Lifecycle:
    """`STEPS` activities in sequence, then done."""

    @workflow.run
    async def run(self) -> None:
        for _ in range(STEPS):
            await workflow.execute_activity(step, start_to_close_timeout=timedelta(seconds=60))

    @workflow.signal(name="nudge")
    def nudge(self) -> None:
        """What signal-with-start delivers; the lifecycle needs nothing from it."""


async def measure(client: Client, count: int) -> float:
    """Lifecycles per second for `count` of them started together, until the last is done."""
    queue = f"ceiling-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[Lifecycle], activities=[step]):
        started = time.monotonic()
        handles = await asyncio.gather(
            *(
                client.start_workflow(
                    Lifecycle.run, id=f"{queue}-{i}", task_queue=queue, start_signal="nudge"
                )
                for i in range(count)
            )
        )
        await asyncio.gather(*(handle.result() for handle in handles))
        return count / (time.monotonic() - started)
