"""Long Ray jobs beside short ones, more of them than a worker has activity slots.

The local stack on the simulated runtime, its worker given two activity slots
(`KUBERAY_TEMPORAL_MAX_CONCURRENT_ACTIVITIES=2`, the SDK's default is 100): three RayJobs whose
jobs run for an hour (two HTTPMode, one K8sJobMode) reach Running with Ray's own status, and a
five-second HTTPMode RayJob applied after them still completes. An activity held open while a
job runs would take a slot per long job, so the short job's end would never be seen in HTTPMode,
where nothing in Kubernetes changes when it ends; here no activity stays open, and the worker's
watch of running Ray jobs tells the workflow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import LocalStack, running_stack
from tests.e2e.test_metrics import apply, get, reaches
from tests.e2e.test_simulated_ray import sample
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SLOTS = {"KUBERAY_TEMPORAL_MAX_CONCURRENT_ACTIVITIES": "2"}
HOUR = {"entrypoint": "python -c 'import time; time.sleep(3600)'"}


async def ray_says_running(stack: LocalStack, name: str) -> bool:
    status: dict[str, Any] = (await get(stack, "rayjob", name)).get("status") or {}
    return (status.get("jobDeploymentStatus"), status.get("jobStatus")) == ("Running", "RUNNING")


async def test_a_short_job_completes_beside_more_long_jobs_than_activity_slots(
    tmp_path: Path,
) -> None:
    async with running_stack(tmp_path, "simulated", SLOTS) as stack:
        long_jobs = {
            "long-http-1": sample("long-http-1", "rayjob.http-mode.yaml", **HOUR),
            "long-http-2": sample("long-http-2", "rayjob.http-mode.yaml", **HOUR),
            "long-k8s": sample("long-k8s", "rayjob.k8s-job-mode.yaml", **HOUR),
        }
        for doc in long_jobs.values():
            await apply(stack, doc)
        for name in long_jobs:
            await eventually(
                lambda name=name: ray_says_running(stack, name),
                within=180,
                message=f"{name} Running, and Ray's job RUNNING",
            )
        short = {"entrypoint": "echo short; sleep 5", "ttlSecondsAfterFinished": 0}
        await apply(stack, sample("short", "rayjob.http-mode.yaml", **short))
        done = await reaches(stack, "short", "Complete", within=120)
        assert done["status"]["jobStatus"] == "SUCCEEDED"
        for name in long_jobs:  # still running: nothing above ended them
            assert await ray_says_running(stack, name), name
