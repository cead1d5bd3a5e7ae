"""`kill -9` of the worker while a RayJob runs: Ray gets the job exactly once, the RayJob completes.

The parts run as a deployment runs them: the worker and the bridge are their own processes
(`kuberay-temporal worker` and `kuberay-temporal bridge`), beside devcluster with real Ray pods
and the Temporal dev server, so the worker can die without taking anything else with it. The
worker is killed twice: once while the attempt's RayCluster is still coming up (before the
HTTPMode submission) and once while Ray runs the job (the workflow asleep on its timer, the
worker's watch of running Ray jobs asking Ray). Each time a new worker process takes over the
same workflow from its history, and the new worker's watch starts again from the status.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from devcluster.server import DevCluster
from kuberay_temporal.binaries import temporal_cli
from tests.chaos.processes import Supervised, operator_component
from tests.e2e.conftest import LocalStack
from tests.e2e.rayjob_tools import adapt, apply, ray_jobs, reaches, sample, status
from tests.eventually import eventually
from tests.reference import REPO_ROOT
from tests.time_skipping import SERVER_STARTUP
from worker.search_attributes import ALL_KEYS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(480)]

JOB_SECONDS = 25
"""Long enough for the worker to die and its successor to take over while Ray runs the job."""


@pytest_asyncio.fixture
async def stack(tmp_path: Path) -> AsyncIterator[LocalStack]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        dev_server_startup_timeout=SERVER_STARTUP,
        search_attributes=ALL_KEYS,
        data_converter=pydantic_data_converter,
    )
    try:
        cluster = DevCluster(tmp_path / "cluster", runtime="process", pod_network=True)
        async with cluster:
            kubeconfig = cluster.kubeconfig_path
            running = LocalStack(tmp_path / "state", kubeconfig, env.client, tmp_path / "log")
            await running.kubectl("apply", "-f", str(REPO_ROOT / "deploy" / "crds"))
            yield running
    finally:
        await env.shutdown()


def component(stack: LocalStack, name: str) -> Supervised:
    return operator_component(
        name,
        stack.client.service_client.config.target_host,
        stack.kubeconfig,
        stack.kubeconfig.parent,
    )


async def kill(process: Supervised) -> None:
    """SIGKILL of a process that was running: no drain, no goodbye to the server."""
    running = process.process
    assert running is not None and running.returncode is None, "died before the kill"
    await process.kill()
    assert running.returncode == -signal.SIGKILL


async def test_kill_9_of_the_worker_submits_once_and_completes(stack: LocalStack) -> None:
    worker, bridge = component(stack, "worker"), component(stack, "bridge")
    await worker.start()
    await bridge.start()
    try:
        name = "job-crash"
        entrypoint = f"python -c \"import time; time.sleep({JOB_SECONDS}); print('done')\""
        doc = adapt(
            sample("http"),
            name,
            workers=False,
            entrypoint=entrypoint,
            shutdownAfterJobFinishes=False,
        )
        await apply(stack, doc)

        # First death: the attempt's cluster exists, Ray has no job yet.
        initializing = await reaches(stack, name, "Initializing", within=90)
        cluster, job_id = initializing["rayClusterName"], initializing["jobId"]
        await kill(worker)
        await worker.start()

        # Second death: Ray runs the job; the worker's watch was asking about it.
        await eventually(
            lambda: _ray_runs(stack, cluster, job_id), within=240, message="Ray runs the job"
        )
        await kill(worker)
        await worker.start()

        done = await reaches(stack, name, "Complete", within=240)
        assert done["jobStatus"] == "SUCCEEDED", done
        assert done.get("succeeded") == 1 and not done.get("failed"), done
        assert done["rayClusterName"] == cluster and done["jobId"] == job_id
        # Exactly once: the cluster's Ray knows one job, under the attempt's submission id.
        jobs = await ray_jobs(stack, cluster)
        assert [(j.get("submission_id"), j.get("status")) for j in jobs] == [(job_id, "SUCCEEDED")]
    finally:
        await worker.stop()
        await bridge.stop()


async def _ray_runs(stack: LocalStack, cluster: str, job_id: str) -> bool:
    jobs: list[dict[str, Any]] = await ray_jobs(stack, cluster)
    current = await status(stack, "job-crash")
    ours = [j for j in jobs if j.get("submission_id") == job_id]
    return (
        bool(ours) and ours[0].get("status") == "RUNNING" and current.get("jobStatus") == "RUNNING"
    )
