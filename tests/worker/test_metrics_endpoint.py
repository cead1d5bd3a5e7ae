"""The worker's `/metrics`: the SDK's series from its runtime, then KubeRay's, on one port.

Runs a worker with a runtime of its own against the real dev server and scrapes over HTTP.
The KubeRay series against a Kubernetes API are in
`tests/activities/test_kuberay_metrics.py` and, for whole RayJobs, `tests/e2e/test_metrics.py`.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
from temporalio.testing import WorkflowEnvironment

from runtime.prometheus import Telemetry, build_telemetry, serving_metrics
from runtime.settings import LOOPBACK, Settings
from runtime.temporal_client import connect
from tests.listeners import OTHER_LOCAL_ADDRESS, refused
from worker.running import build_worker
from workflows.diagnostics import PingInput, PingWorkflow


async def scrape(port: int, address: str = LOOPBACK) -> str:
    async with httpx.AsyncClient() as http:
        response = await http.get(f"http://{address}:{port}/metrics", timeout=10)
    response.raise_for_status()
    return response.text


async def test_metrics_are_served_on_their_address_only() -> None:
    """They name every CR: on loopback, another address of the same machine has nothing."""
    telemetry = Telemetry(runtime=None, sdk_address=None, kuberay=None)
    text = 'kuberay_cluster_info{name="c"} 1\n'
    async with serving_metrics(0, telemetry, [lambda: text], address=LOOPBACK) as server:
        assert server is not None and server.url == f"http://127.0.0.1:{server.port}/metrics"
        assert await refused(OTHER_LOCAL_ADDRESS, server.port)
        assert await scrape(server.port) == text
    async with serving_metrics(0, telemetry, [lambda: text], address=OTHER_LOCAL_ADDRESS) as server:
        assert server is not None
        assert await scrape(server.port, OTHER_LOCAL_ADDRESS) == text


def test_no_port_no_runtime() -> None:
    telemetry = build_telemetry(None)
    assert telemetry.runtime is None and telemetry.kuberay is None


def test_json_logs_alone_get_a_runtime_that_forwards_core_logs() -> None:
    telemetry = build_telemetry(None, "json")
    assert telemetry.runtime is not None
    assert telemetry.sdk_address is None and telemetry.kuberay is None


async def test_sdk_and_kuberay_series_on_one_endpoint(
    local_env: WorkflowEnvironment, task_queue: str
) -> None:
    # Two workers in one process each get an exporter of their own.
    other = build_telemetry(0)
    telemetry = build_telemetry(0)
    assert telemetry.sdk_address != other.sdk_address
    assert telemetry.kuberay is not None

    target = local_env.client.service_client.config.target_host
    settings = Settings(temporal_address=target, task_queue=task_queue)
    client = await connect(settings, telemetry.runtime)
    job = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}, "status": {}}
    started = (datetime.now(UTC) - timedelta(seconds=3)).isoformat()
    telemetry.kuberay.job_status_written(
        job, {"jobDeploymentStatus": "Complete", "startTime": started}
    )

    async with (
        serving_metrics(0, telemetry, [telemetry.kuberay.collect], address=LOOPBACK) as server,
        build_worker(client, settings),
    ):
        assert server is not None
        await client.execute_workflow(
            PingWorkflow.run, PingInput(), id=f"ping-{uuid.uuid4()}", task_queue=task_queue
        )
        text = await scrape(server.port)

    assert 'workflow_type="Ping"' in text
    completed = [
        line
        for line in text.splitlines()
        if line.startswith("temporal_workflow_completed{") and f'task_queue="{task_queue}"' in line
    ]
    assert len(completed) == 1 and completed[0].endswith(" 1"), completed
    assert "# TYPE kuberay_job_execution_duration_seconds gauge\n" in text
    (duration,) = [
        line for line in text.splitlines() if line.startswith("kuberay_job_execution_duration")
    ]
    labels = 'name="j",namespace="ns",uid="u",job_deployment_status="Complete",retry_count="0"'
    assert duration.startswith(f"kuberay_job_execution_duration_seconds{{{labels}}} 3.")
