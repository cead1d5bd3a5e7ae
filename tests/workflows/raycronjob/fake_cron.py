"""A RayCronJob as its Kubernetes activities see it, for the workflow tests and recordings.

The Schedule activities are the real ones (`ScheduleActivities`, on the test's Temporal
server); reads, firings, Events and suspend writes are this fake's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.raycluster.contract import RECORD_EVENT, RecordEventInput
from activities.raycronjob import contract
from activities.raycronjob.schedules import ScheduleActivities

EVERY_MINUTE = contract.ScheduleWanted(cron="* * * * *")


@dataclass
class CronWorld:
    """One RayCronJob as its activities see it, and what they were asked to do."""

    generation: int = 1
    wanted: contract.ScheduleWanted | None = EVERY_MINUTE
    suspend: bool = False
    violations: list[str] = field(default_factory=list)
    exists: bool = True
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    last_schedule_time: datetime | None = None
    fired: list[datetime] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    """The reasons of the Events recorded, in order (`messages` holds their messages)."""
    messages: list[str] = field(default_factory=list)
    suspend_writes: list[bool] = field(default_factory=list)

    def activities(self) -> list[Any]:
        @activity.defn(name=contract.READ_RAYCRONJOB.name)
        async def read(params: contract.ReadCronJobInput) -> contract.CronJobSnapshot:
            if not self.exists:
                return contract.CronJobSnapshot(exists=False)
            return contract.CronJobSnapshot(
                generation=self.generation,
                wanted=self.wanted,
                suspend=self.suspend,
                violations=self.violations,
                created_at=self.created_at,
                last_schedule_time=self.last_schedule_time,
            )

        @activity.defn(name=contract.CREATE_SCHEDULED_RAYJOB.name)
        async def fire(params: contract.CreateScheduledJobInput) -> contract.FiringResult:
            self.fired.append(params.scheduled_at)
            return contract.FiringResult(rayjob=f"{params.ref.name}-x", created=True)

        @activity.defn(name=contract.SET_RAYCRONJOB_SUSPEND.name)
        async def set_suspend(params: contract.SetCronJobSuspendInput) -> None:
            self.suspend_writes.append(params.suspend)

        @activity.defn(name=RECORD_EVENT.name)
        async def record(params: RecordEventInput) -> None:
            self.events.append(params.event.reason)
            self.messages.append(params.event.message)

        return [read, fire, set_suspend, record, *ScheduleActivities().activities()]
