"""A RayCronJob on the local stack: its Schedule fires each minute, suspend pauses it, delete
removes it (`kuberay-temporal dev --runtime simulated`: real Temporal dev server, devcluster,
the Ray simulator behind the dashboard)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from temporalio.client import ScheduleDescription

from activities.raycronjob.schedules import described
from crds.feature_gates import Gate
from tests.e2e.conftest import LocalStack, gates_on, running_stack
from tests.e2e.test_metrics import apply, get, reaches
from tests.eventually import eventually
from tests.reference import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
NAME = "every-minute"


@pytest_asyncio.fixture
async def cron_stack(tmp_path: Path) -> AsyncIterator[LocalStack]:
    """The simulated stack with KubeRay's RayCronJob gate on (off by default in v1.7.0)."""
    async with running_stack(tmp_path, "simulated", gates_on(Gate.RAY_CRON_JOB)) as stack:
        yield stack


async def schedule_of(stack: LocalStack, schedule_id: str) -> ScheduleDescription | None:
    return await described(stack.client.get_schedule_handle(schedule_id))


async def test_a_raycronjob_fires_each_minute_until_suspended_then_goes_with_its_schedule(
    cron_stack: LocalStack,
) -> None:
    stack = cron_stack
    doc = yaml.safe_load((REPO_ROOT / "samples" / "raycronjob.yaml").read_text())
    doc["metadata"]["name"] = NAME
    doc["spec"]["jobTemplate"]["entrypoint"] = "echo simulated; sleep 1"
    await apply(stack, doc)
    uid = (await get(stack, "raycronjob", NAME))["metadata"]["uid"]
    workflow_id = f"raycronjob/default/{NAME}/{uid}"
    found = await eventually(lambda: schedule_of(stack, workflow_id), message="the Schedule")
    assert not found.schedule.state.paused

    async def two_rayjobs() -> list[dict[str, Any]] | None:
        raw = await stack.kubectl(
            "get", "rayjobs", "-l", f"ray.io/cronjob-name={NAME}", "-o", "json"
        )
        items = json.loads(raw)["items"]
        return items if len(items) >= 2 else None

    # The next two minutes' ticks create a RayJob each, a minute apart; each completes.
    jobs = await eventually(two_rayjobs, within=150, message="two ticks' RayJobs")
    ticks = sorted(j["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"] for j in jobs)
    assert all(tick.endswith(":00Z") for tick in ticks), ticks
    first, second = (datetime.fromisoformat(t) for t in ticks[:2])
    assert second - first == timedelta(minutes=1)
    for job in jobs:
        done = await reaches(stack, job["metadata"]["name"], "Complete", within=120)
        assert done["status"]["jobStatus"] == "SUCCEEDED"
    cronjob = await get(stack, "raycronjob", NAME)
    assert cronjob["status"]["lastScheduleTime"] >= ticks[-1]

    # Suspended by a person through Temporal: written to the spec, then the Schedule pauses.
    await stack.client.get_workflow_handle(workflow_id).signal("suspend", {"reason": "test"})

    async def paused() -> bool:
        found = await schedule_of(stack, workflow_id)
        return found is not None and found.schedule.state.paused

    await eventually(paused, within=30, message="the Schedule paused")
    assert (await get(stack, "raycronjob", NAME))["spec"]["suspend"] is True
    events = await stack.kubectl(
        "get", "events", "--field-selector", f"involvedObject.name={NAME}", "-o", "json"
    )
    assert "SuspendedRayCronJob" in {e["reason"] for e in json.loads(events)["items"]}

    # Deleted: the Schedule is deleted and the workflow ends; its RayJobs go with it.
    await stack.kubectl("delete", "raycronjob", NAME)
    await eventually(lambda: _absent(stack, workflow_id), within=30, message="the Schedule deleted")
    result = await stack.client.get_workflow_handle(workflow_id).result()
    assert "its Schedule too" in result
    await eventually(lambda: _no_rayjobs(stack), within=60, message="the RayJobs collected")


async def _absent(stack: LocalStack, schedule_id: str) -> bool:
    return await schedule_of(stack, schedule_id) is None


async def _no_rayjobs(stack: LocalStack) -> bool:
    raw = await stack.kubectl("get", "rayjobs", "-l", f"ray.io/cronjob-name={NAME}", "-o", "json")
    return not json.loads(raw)["items"]
