"""`kuberay-temporal worker` serves an existing server until SIGINT."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid

from temporalio.testing import WorkflowEnvironment

from workflows.diagnostics import PingInput, PingWorkflow

DEADLINE = 60.0


async def test_worker_command_runs_workflows_and_stops_cleanly(
    local_env: WorkflowEnvironment, task_queue: str
) -> None:
    client = local_env.client
    address = client.service_client.config.target_host
    environ = os.environ | {"TEMPORAL_ADDRESS": address, "KUBERAY_TEMPORAL_TASK_QUEUE": "unused"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        "worker",
        "--task-queue",
        task_queue,
        env=environ,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        # Queued until the worker polls the flag's task queue, not the environment's.
        result = await asyncio.wait_for(
            client.execute_workflow(
                PingWorkflow.run, PingInput(), id=f"ping-{uuid.uuid4()}", task_queue=task_queue
            ),
            DEADLINE,
        )
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = await asyncio.wait_for(process.communicate(), DEADLINE)

    assert result.finished_at == result.started_at
    assert process.returncode == 0, output.decode()
    assert f"polling task queue {task_queue} on {address}" in output.decode()


async def test_worker_command_reports_an_unreachable_server_in_one_line() -> None:
    environ = os.environ | {"TEMPORAL_ADDRESS": "127.0.0.1:1"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        "worker",
        env=environ,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), DEADLINE)

    assert process.returncode == 1
    lines = stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("kuberay-temporal worker: Failed client connect")


async def test_worker_command_rejects_invalid_settings() -> None:
    environ = os.environ | {"KUBERAY_TEMPORAL_MAX_CACHED_WORKFLOWS": "lots"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        "worker",
        env=environ,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), DEADLINE)

    assert process.returncode == 2
    assert stderr.decode().splitlines() == [
        "kuberay-temporal worker: invalid settings: "
        "KUBERAY_TEMPORAL_MAX_CACHED_WORKFLOWS='lots': Input should be a valid integer"
    ]
