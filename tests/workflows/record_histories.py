"""Record the canonical workflow histories that the replay test keeps replaying.

    python -m tests.workflows.record_histories

Each scenario runs a workflow on the time-skipping server against the in-memory cluster of
the workflow tests, to completion, and writes its history under `tests/workflows/histories/`.
Re-record only on purpose: a history that no longer replays means running workflows would
break, and the change needs `workflow.patched()` instead.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from crds.refs import ObjectRef
from kuberay_temporal.binaries import temporal_test_server
from tests.eventually import eventually
from tests.workflows.raycluster.fake_cluster import FakeCluster
from tests.workflows.raycluster.test_workflow import SPEC, register_state_attribute
from worker.running import build_sandbox_runner
from workflows import messages
from workflows.raycluster.state import RayClusterInput
from workflows.raycluster.workflow import RayClusterWorkflow

HISTORIES = Path(__file__).parent / "histories"


async def raycluster_lifecycle(client: Client) -> WorkflowHistory:
    """Create, become ready, scale up and down, suspend, resume, delete."""
    cluster = FakeCluster("lifecycle", dict(SPEC))
    queue = f"record-{uuid.uuid4()}"
    ref = ObjectRef(kind="RayCluster", namespace="default", name="lifecycle", uid="uid-1")
    async with Worker(
        client,
        task_queue=queue,
        workflows=[RayClusterWorkflow],
        activities=cluster.activities(),
        workflow_runner=build_sandbox_runner(),
    ):
        handle = await client.start_workflow(
            RayClusterWorkflow.run, RayClusterInput(ref=ref), id=ref.workflow_id, task_queue=queue
        )

        async def settle() -> None:
            cluster.finish_terminating()
            cluster.make_ready()
            await handle.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["Pod"]))

        async def edit(**fields: object) -> None:
            cluster.set_group(0, **fields)
            await handle.signal(
                messages.SPEC_CHANGED, messages.SpecChanged(generation=cluster.generation)
            )

        await eventually(lambda: len(cluster.live()) == 3)
        await settle()
        await eventually(lambda: cluster.status and cluster.status.state == "ready")
        await edit(replicas=3)
        await eventually(lambda: len(cluster.live("worker")) == 3)
        await settle()
        await edit(replicas=1)
        await eventually(lambda: len(cluster.live("worker")) == 1)
        await settle()
        await handle.signal(messages.SUSPEND, messages.UserRequest(reason="record"))
        await eventually(lambda: cluster.live() == [])
        await settle()
        await eventually(lambda: cluster.status and cluster.status.state == "suspended")
        await handle.signal(messages.RESUME, messages.UserRequest(reason="record"))
        await eventually(lambda: len(cluster.live()) == 2)
        cluster.exists = False
        await handle.signal(messages.DELETED, messages.Deleted(gone=True))
        await handle.result()
        return await handle.fetch_history()


SCENARIOS = {"raycluster_lifecycle": raycluster_lifecycle}


async def main() -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=pydantic_data_converter,
    )
    try:
        await register_state_attribute(env)
        for name, scenario in SCENARIOS.items():
            history = await scenario(env.client)
            (HISTORIES / f"{name}.json").write_text(history.to_json())
            print(f"recorded {name}: {len(history.events)} events")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
