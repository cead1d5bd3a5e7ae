"""The Ping workflow runs on both servers, through the worker the commands build."""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio.testing import WorkflowEnvironment

from runtime.settings import Settings
from worker.running import build_worker
from workflows.diagnostics import PingInput, PingWorkflow


async def test_ten_minute_timer_fires_on_skipped_time(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    # Ten minutes of workflow time inside the test's two-minute timeout: the server skipped it.
    client = time_skipping_env.client
    settings = Settings(task_queue=task_queue)
    async with build_worker(client, settings):
        result = await client.execute_workflow(
            PingWorkflow.run,
            PingInput(duration=timedelta(minutes=10)),
            id=f"ping-{uuid.uuid4()}",
            task_queue=task_queue,
        )

    assert result.finished_at - result.started_at >= timedelta(minutes=10)
    assert result.finished_at - result.started_at < timedelta(minutes=11)


async def test_ping_on_local_server_waits_for_its_timer(
    local_env: WorkflowEnvironment, task_queue: str
) -> None:
    client = local_env.client
    async with build_worker(client, Settings(task_queue=task_queue)):
        result = await client.execute_workflow(
            PingWorkflow.run,
            PingInput(duration=timedelta(milliseconds=300)),
            id=f"ping-{uuid.uuid4()}",
            task_queue=task_queue,
        )

    assert result.finished_at - result.started_at >= timedelta(milliseconds=300)


async def test_ping_without_duration_sets_no_timer(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    client = time_skipping_env.client
    async with build_worker(client, Settings(task_queue=task_queue)):
        handle = await client.start_workflow(
            PingWorkflow.run, PingInput(), id=f"ping-{uuid.uuid4()}", task_queue=task_queue
        )
        result = await handle.result()
        history = await handle.fetch_history()

    assert result.finished_at == result.started_at
    assert not [
        event for event in history.events if event.HasField("timer_started_event_attributes")
    ]
