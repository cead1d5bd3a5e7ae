"""A RayJob with an alias bomb in `runtimeEnvYAML` ends ValidationFailed; nothing is retried.

The bomb is refused by validation, in the workflow, before any activity builds from it. An
activity meets one only when the RayJob is edited between the workflow's read and its own;
it then fails for good, and the workflow waits for the edit's pass instead of failing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from activities.rayjob import contract
from tests.alias_bombs import BOMB_398, BOMB_584
from tests.eventually import eventually

from .fake_world import FakeJobWorld
from .test_workflow import Harness, job_spec

EXPANDS = (
    "runtimeEnvYAML expands to more than 25,000 keys and values through its aliases (*name) "
    "(line 5)"
)


class EditedBetweenReads(FakeJobWorld):
    """The RayJob becomes an alias bomb after the workflow read it, before its submitter."""

    refusals = 0

    @activity.defn(name=contract.CREATE_SUBMITTER_JOB.name)
    async def create_submitter(
        self, params: contract.CreateSubmitterInput
    ) -> contract.CreateResult:
        self.refusals += 1
        self.edit(runtimeEnvYAML=BOMB_584)
        raise ApplicationError(
            f"spec.runtimeEnvYAML: {EXPANDS}", type=contract.INVALID_SPEC_ERROR, non_retryable=True
        )


class RacingHarness(Harness):
    def __init__(self, env: WorkflowEnvironment, queue: str) -> None:
        super().__init__(env, queue)
        self.world = EditedBetweenReads("train", job_spec())


@pytest_asyncio.fixture
async def harness(env: WorkflowEnvironment, task_queue: str) -> AsyncIterator[Harness]:
    harness = Harness(env, task_queue)
    async with harness.worker():
        yield harness
        await harness.terminate()


@pytest_asyncio.fixture
async def racing(env: WorkflowEnvironment, task_queue: str) -> AsyncIterator[RacingHarness]:
    harness = RacingHarness(env, task_queue)
    async with harness.worker():
        yield harness
        await harness.terminate()


async def retried_work(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """Activity attempts after the first, and failed workflow tasks, recorded or pending."""
    found = []
    async for event in handle.fetch_history_events():
        started = event.activity_task_started_event_attributes
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED and started.attempt > 1:
            found.append(f"event {event.event_id}: attempt {started.attempt}")
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            found.append(f"event {event.event_id}: workflow task failed")
    for pending in (await handle.describe()).raw_description.pending_activities:
        if pending.attempt > 1:
            found.append(f"{pending.activity_type.name}: attempt {pending.attempt}")
    return found


async def test_an_alias_bomb_ends_validation_failed_with_no_retries(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(runtimeEnvYAML=BOMB_398)
    handle = await harness.start()
    await harness.state("ValidationFailed")
    assert world.status is not None
    assert world.status.message is not None and f"spec.runtimeEnvYAML: {EXPANDS}" in (
        world.status.message
    )
    assert world.reasons() == ["InvalidRayJobSpec"]
    assert world.created_clusters == [] and world.submitters_created == 0
    assert world.submissions == []
    assert await retried_work(handle) == []


@pytest.mark.parametrize(
    ("runtime_env", "message"),
    [
        # 125,000 numbers in 256 KiB: seconds of a workflow task's time before the node bound.
        pytest.param(
            "a: [" + ",".join(["1"] * 125_000) + "]",
            "runtimeEnvYAML holds more than 25,000 keys and values (line 1)",
            id="too-many-nodes",
        ),
        # PyYAML raised KeyError here, failing the workflow task on every retry.
        pytest.param(
            "pip: !!bool maybe",
            "runtimeEnvYAML is not valid YAML: found a value that !!bool cannot read "
            "(line 1, column 6)",
            id="unreadable-scalar",
        ),
    ],
)
async def test_a_runtime_env_beyond_the_bounds_ends_validation_failed(
    harness: Harness, runtime_env: str, message: str
) -> None:
    world = harness.world
    world.spec = job_spec(runtimeEnvYAML=runtime_env)
    handle = await harness.start()
    await harness.state("ValidationFailed")
    assert world.status is not None and world.status.message is not None
    assert f"spec.runtimeEnvYAML: {message}" in world.status.message
    assert world.created_clusters == [] and world.submissions == []
    assert await retried_work(handle) == []


async def test_a_bomb_edited_in_after_validation_is_refused_once(racing: RacingHarness) -> None:
    world = racing.world
    assert isinstance(world, EditedBetweenReads)
    handle = await racing.start()
    await eventually(lambda: world.live_clusters(), message="a RayCluster")
    world.make_ready()
    await racing.owned_changed()
    await eventually(lambda: world.refusals, message="the submitter's refusal")
    await racing.spec_changed()  # as the bridge signals the edit
    await racing.state("ValidationFailed")
    assert world.status is not None and EXPANDS in (world.status.message or "")
    assert world.refusals == 1 and world.submitters_created == 0
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    progress = await racing.progress()
    assert any(f"refused, spec.runtimeEnvYAML: {EXPANDS}" in d for d in progress.last_decisions)
    assert await retried_work(handle) == []
