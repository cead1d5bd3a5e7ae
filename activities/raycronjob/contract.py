"""Inputs and results of the RayCronJob activities.

A RayCronJob is a Temporal Schedule: the RayCronJob workflow keeps one Schedule per CR in step
with the spec (`SYNC_SCHEDULE`), and each firing of the Schedule starts a short workflow that
creates that tick's RayJob (`CREATE_SCHEDULED_RAYJOB`). What the workflow reads of the CR is
the schedule and its switches, never the job template: the firing reads the template from the
CR when it creates the RayJob, as KubeRay does, so a template (which may hold secrets in env
values) never enters a history.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from activities.contract import ActivityRef
from activities.raycluster.contract import RECORD_EVENT, EventSpec, RecordEventInput
from crds.refs import ObjectRef

__all__ = [
    "COUNTED_AT_MOST",
    "CREATE_SCHEDULED_RAYJOB",
    "DELETE_SCHEDULE",
    "INVALID_SCHEDULE_ERROR",
    "MAX_MADE_UP",
    "READ_RAYCRONJOB",
    "RECORD_EVENT",
    "SET_RAYCRONJOB_SUSPEND",
    "SYNC_SCHEDULE",
    "CronJobSnapshot",
    "EventSpec",
    "FiringInput",
    "FiringResult",
    "RecordEventInput",
    "ScheduleRef",
    "ScheduleWanted",
    "SetCronJobSuspendInput",
    "SyncScheduleInput",
    "SyncScheduleResult",
]


MAX_MADE_UP = 100
"""The most missed ticks a RayCronJob makes up at once: its newest ones.

KubeRay makes up every tick since `lastScheduleTime`, however many: a RayCronJob running
every minute, resumed (or taken over) with a year-old `lastScheduleTime`, would start 525,600
RayJobs. Kubernetes' CronJob starts none when more than 100 were missed; here the newest 100
start (for a RayJob each), the older ones are skipped with a Warning Event, and a server
outage is made up no further back than 100 ticks either.
"""
COUNTED_AT_MOST = 1000
"""Skipped ticks are counted up to this (the Temporal server lists no more times at once)."""

INVALID_SCHEDULE_ERROR = "InvalidSchedule"
"""The error type of a sync the Temporal server refused: reported on the CR, never retried."""


class ReadCronJobInput(BaseModel):
    """Read one RayCronJob."""

    ref: ObjectRef


class ScheduleWanted(BaseModel):
    """What the Temporal Schedule of a valid RayCronJob holds."""

    model_config = ConfigDict(frozen=True)

    cron: str
    time_zone: str = ""
    """An IANA zone; empty is UTC (KubeRay uses its operator's local zone)."""
    catchup_seconds: int | None = None
    """How far back missed firings may be made up at most (the annotation); None: as far as
    `MAX_MADE_UP` ticks reach."""


class CronJobSnapshot(BaseModel):
    """The RayCronJob as its workflow needs it: no job template (`contract`'s docstring)."""

    exists: bool = True
    deleting: bool = False
    generation: int = 0
    wanted: ScheduleWanted | None = None
    """None when the spec is invalid (`violations` says why)."""
    suspend: bool = False
    violations: list[str] = Field(default_factory=list)
    created_at: datetime | None = None
    last_schedule_time: datetime | None = None


class SetCronJobSuspendInput(BaseModel):
    """Write `spec.suspend` (a person's suspend or resume signal)."""

    ref: ObjectRef
    suspend: bool


class ScheduleRef(BaseModel):
    """The Temporal Schedule of one RayCronJob: its id is the RayCronJob workflow's id."""

    ref: ObjectRef

    @property
    def schedule_id(self) -> str:
        """The Schedule's id."""
        return self.ref.workflow_id


class SyncScheduleInput(BaseModel):
    """Create or update the Schedule, paused or not, and make up the firings it missed.

    `wanted` None keeps the Schedule's times as they are (an invalid spec pauses the Schedule
    it had; there is nothing valid to write). Firings after `since` (the last one written to
    the status, else the CR's creation) that are due and within the catch-up window are made
    up when the Schedule is created or unpaused: KubeRay makes up every tick after its
    `lastScheduleTime` in the same way, here no more than the newest `MAX_MADE_UP`.
    """

    ref: ObjectRef
    wanted: ScheduleWanted | None
    paused: bool
    note: str = ""
    since: datetime | None = None


class SyncScheduleAction(StrEnum):
    """What a sync did to the Schedule."""

    CREATED = "created"
    UPDATED = "updated"
    NOTHING = "nothing"
    """No Schedule and nothing valid to create one from."""


class SyncScheduleResult(BaseModel):
    """What a sync did; `made_up` is where the firings it asked Temporal to make up begin."""

    action: SyncScheduleAction
    paused: bool = False
    made_up: datetime | None = None
    skipped: int = 0
    """Ticks missed after `since` and before `made_up`, not made up (`COUNTED_AT_MOST` means
    that many or more)."""


class FiringInput(BaseModel):
    """What each firing of a RayCronJob's Schedule starts with."""

    ref: ObjectRef


class CreateScheduledJobInput(BaseModel):
    """Create the RayJob of the tick at `scheduled_at` and advance `lastScheduleTime`."""

    ref: ObjectRef
    scheduled_at: datetime


class FiringResult(BaseModel):
    """The RayJob of a firing, or why there is none."""

    rayjob: str = ""
    created: bool = False
    skipped: str = ""
    """Why no RayJob was created: the RayCronJob is gone, being deleted or suspended."""
    refused: str = ""
    """The API server's refusal of the RayJob (a quota, RBAC, an invalid object), for an
    Event: no string of the RayJob's spec is quoted in it. Retrying would not change it."""


# The activities, as the workflows call them (the names are in recorded histories).

READ_RAYCRONJOB = ActivityRef("read_raycronjob", ReadCronJobInput, CronJobSnapshot)
SYNC_SCHEDULE = ActivityRef("sync_raycronjob_schedule", SyncScheduleInput, SyncScheduleResult)
DELETE_SCHEDULE = ActivityRef("delete_raycronjob_schedule", ScheduleRef, type(None))
SET_RAYCRONJOB_SUSPEND = ActivityRef("set_raycronjob_suspend", SetCronJobSuspendInput, type(None))
CREATE_SCHEDULED_RAYJOB = ActivityRef(
    "create_scheduled_rayjob", CreateScheduledJobInput, FiringResult
)
