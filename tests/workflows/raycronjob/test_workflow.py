"""The RayCronJob workflow and its Schedule on a real Temporal dev server.

Schedules are the server's (the time-skipping test server has none), so these tests use the
dev server with the real Schedule activities; the RayCronJob itself is a fake (`CronWorld`)
whose firings are recorded instead of creating RayJobs. Firings are triggered or made up, not
waited for: the Schedule's own minute ticks are left to the end-to-end test.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client, ScheduleDescription
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.raycronjob import contract
from activities.raycronjob.contract import MAX_MADE_UP
from activities.raycronjob.schedules import FIRING_WORKFLOW, described
from crds.refs import ObjectRef
from tests.eventually import eventually
from tests.workflows.raycronjob.fake_cron import CronWorld
from worker.running import strict_sandbox_runner
from workflows import messages
from workflows.raycronjob.decisions import NOTE_INVALID, NOTE_SUSPENDED
from workflows.raycronjob.firing import RayCronJobFiringWorkflow
from workflows.raycronjob.state import RayCronJobInput
from workflows.raycronjob.workflow import RayCronJobWorkflow

pytestmark = pytest.mark.timeout(120)
SKIPPED = "SkippedMissedTicks"


@dataclass
class Harness:
    client: Client
    ref: ObjectRef
    world: CronWorld

    async def signal(self, name: str, arg: Any) -> None:
        await self.client.get_workflow_handle(self.ref.workflow_id).signal(name, arg)

    async def edit(self, **fields: Any) -> None:
        """Change the fake CR as an edit would, and tell the workflow as the bridge would."""
        for key, value in fields.items():
            setattr(self.world, key, value)
        self.world.generation += 1
        await self.signal(
            messages.SPEC_CHANGED, messages.SpecChanged(generation=self.world.generation)
        )

    async def schedule(self) -> ScheduleDescription | None:
        return await described(self.client.get_schedule_handle(self.ref.workflow_id))

    async def paused(self, note: str) -> bool:
        found = await self.schedule()
        return (
            found is not None and found.schedule.state.paused and found.schedule.state.note == note
        )

    async def suspended(self) -> None:
        """Wait for the Schedule, then suspend the RayCronJob and wait for it to pause."""
        await eventually(self.running, message="the Schedule")
        await self.edit(suspend=True)
        await eventually(lambda: self.paused(NOTE_SUSPENDED), message="paused")

    async def running(self) -> bool:
        found = await self.schedule()
        return found is not None and not found.schedule.state.paused


@pytest_asyncio.fixture
async def harness(local_env: WorkflowEnvironment, task_queue: str) -> AsyncIterator[Harness]:
    client = local_env.client
    ref = ObjectRef(kind="RayCronJob", namespace="ns", name="cron", uid=str(uuid.uuid4()))
    world = CronWorld()
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[RayCronJobWorkflow, RayCronJobFiringWorkflow],
        activities=world.activities(),
        workflow_runner=strict_sandbox_runner(),
    ):
        await client.start_workflow(
            RayCronJobWorkflow.run,
            RayCronJobInput(ref=ref),
            id=ref.workflow_id,
            task_queue=task_queue,
        )
        yield Harness(client, ref, world)
        with contextlib.suppress(RPCError):
            await client.get_workflow_handle(ref.workflow_id).terminate("test finished")
        with contextlib.suppress(RPCError):
            await client.get_schedule_handle(ref.workflow_id).delete()


async def test_the_schedule_follows_the_raycronjob_and_fires_its_rayjobs(harness: Harness) -> None:
    world = harness.world
    found = await eventually(harness.schedule, message="the Schedule")
    assert not found.schedule.state.paused
    # The server keeps `* * * * *` as its calendar: a firing at every minute.
    upcoming = found.info.next_action_times[:3]
    assert all(t.second == 0 for t in upcoming), upcoming
    assert [b - a for a, b in itertools.pairwise(upcoming)] == [timedelta(minutes=1)] * 2
    action = found.schedule.action
    assert getattr(action, "workflow", None) == FIRING_WORKFLOW

    # A firing (here by hand) creates the RayJob of its time.
    await harness.client.get_schedule_handle(harness.ref.workflow_id).trigger()
    await eventually(lambda: world.fired, message="a firing")
    assert abs(world.fired[0] - datetime.now(UTC)) < timedelta(minutes=1)

    # Suspended: paused, one SuspendedRayCronJob Event.
    await harness.edit(suspend=True)
    await eventually(lambda: harness.paused(NOTE_SUSPENDED), message="paused")
    await eventually(lambda: world.events == ["SuspendedRayCronJob"], message="the Event")

    # Resumed after the ticks of three minutes were missed: Temporal makes them up, each for
    # the minute it should have fired at (the RayJob's name is derived from it).
    world.fired.clear()
    last = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=3)
    world.last_schedule_time = last
    await harness.edit(suspend=False)
    await eventually(harness.running, message="running again")
    missed = [last + timedelta(minutes=n) for n in (1, 2, 3)]
    await eventually(lambda: set(missed) <= set(world.fired), message=f"firings at {missed}")
    assert all(t > last and t.second == 0 for t in world.fired), world.fired

    # An invalid edit: a Warning, and the Schedule paused with its old times.
    await harness.edit(wanted=None, violations=["spec.schedule: invalid cron schedule"])
    await eventually(lambda: harness.paused(NOTE_INVALID), message="paused as invalid")
    assert world.events == ["SuspendedRayCronJob", "InvalidRayCronJobSpec"]  # Event first

    # Deleted: the Schedule goes, the workflow ends.
    world.exists = False
    await harness.signal(messages.DELETED, messages.Deleted(gone=True))
    handle = harness.client.get_workflow_handle(harness.ref.workflow_id)
    assert "its Schedule too" in await handle.result()
    assert await harness.schedule() is None


async def test_a_person_suspends_through_the_raycronjob(harness: Harness) -> None:
    await eventually(harness.running, message="the Schedule")
    await harness.signal(messages.SUSPEND, {"reason": "maintenance"})
    await eventually(lambda: harness.world.suspend_writes == [True], message="spec.suspend")
    # The write comes back from the API as an edit; then the Schedule pauses.
    await harness.edit(suspend=True)
    await eventually(lambda: harness.paused(NOTE_SUSPENDED), message="paused")


async def test_the_catchup_window_bounds_what_is_made_up(harness: Harness) -> None:
    world = harness.world
    await harness.suspended()

    # Suspended for half an hour; the CR makes up two minutes at most.
    world.fired.clear()
    world.last_schedule_time = datetime.now(UTC) - timedelta(minutes=30)
    window = contract.ScheduleWanted(cron="* * * * *", catchup_seconds=120)
    resumed_at = datetime.now(UTC)
    await harness.edit(suspend=False, wanted=window)
    await eventually(harness.running, message="running again")
    found = await harness.schedule()
    assert found is not None
    assert found.schedule.policy.catchup_window == timedelta(minutes=2)
    recent = resumed_at.replace(second=0, microsecond=0)
    await eventually(lambda: recent in world.fired, message=f"the firing at {recent}")
    assert all(t >= resumed_at - timedelta(minutes=2, seconds=1) for t in world.fired), world.fired


async def test_a_year_of_missed_ticks_makes_up_the_newest_hundred(harness: Harness) -> None:
    world = harness.world
    await harness.suspended()

    # Resumed (or taken over) with a lastScheduleTime a year old: 525,600 ticks missed.
    world.fired.clear()
    world.last_schedule_time = datetime.now(UTC) - timedelta(days=365)
    resumed_at = datetime.now(UTC)
    await harness.edit(suspend=False)
    await eventually(lambda: SKIPPED in world.events, message="the Warning")
    message = world.messages[world.events.index(SKIPPED)]
    assert message.startswith("ns/cron: 1,000 or more missed ticks before "), message
    # The newest 100 at most: the ticks of the last 99 minutes, none older.
    await eventually(lambda: len(set(world.fired)) >= MAX_MADE_UP - 1, within=60, message="made up")
    assert min(world.fired) >= resumed_at - timedelta(minutes=MAX_MADE_UP - 1), min(world.fired)


async def test_a_schedule_the_server_refuses_is_reported_not_retried(harness: Harness) -> None:
    world = harness.world
    await eventually(harness.running, message="the Schedule")
    await harness.edit(wanted=contract.ScheduleWanted(cron="61 * * * *"))
    await eventually(lambda: world.events == ["InvalidRayCronJobSpec"], message="the Warning")
    handle = harness.client.get_workflow_handle(harness.ref.workflow_id)
    progress = await handle.query(messages.PROGRESS, result_type=messages.Progress)
    assert progress.state == "Invalid"
    assert "refused the RayCronJob's Schedule" in progress.last_decisions[-1]
    # The workflow goes on: a good edit is written.
    await harness.edit(wanted=contract.ScheduleWanted(cron="*/5 * * * *"))

    async def every_five() -> bool:
        found = await harness.schedule()
        upcoming = [] if found is None else found.info.next_action_times
        return bool(upcoming) and all(t.minute % 5 == 0 for t in upcoming)

    await eventually(every_five, message="the edited Schedule")
