"""What a RayCronJob's Schedule should say, and what to tell people about it: pure rules.

KubeRay's controller, per reconcile: an invalid spec gets an `InvalidRayCronJobSpec` Warning
and no RayJob; a suspended one a `SuspendedRayCronJob` Event and no RayJob; otherwise the
RayJob of every tick since `lastScheduleTime` (the creation time at first). Here the Temporal
Schedule keeps the times, so a pass only decides what the Schedule says: its times, paused or
not, and from when missed ticks are made up when it starts (or starts again) firing. Unlike
KubeRay's, the make-up is bounded (`contract.MAX_MADE_UP`), and what it leaves out is told.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from activities.raycronjob.contract import (
    COUNTED_AT_MOST,
    MAX_MADE_UP,
    CronJobSnapshot,
    SyncScheduleInput,
    SyncScheduleResult,
)
from crds.common import format_time
from crds.constants import ANNOTATION_CATCHUP_WINDOW
from crds.refs import ObjectRef
from workflows.raycronjob.state import RayCronJobState, Synced

SCHEDULED = "Scheduled"
SUSPENDED = "Suspended"
INVALID = "Invalid"
NOTE_SUSPENDED = "spec.suspend is true: no new RayJobs"
NOTE_INVALID = "the RayCronJob's spec is invalid: no new RayJobs (see its Events)"
SUSPENDED_MESSAGE = "RayCronJob suspended, no new RayJobs will be created"


@dataclass(frozen=True)
class Pass:
    """What one pass does."""

    headline: str
    synced: Synced
    """What the Schedule says after the pass."""
    sync: SyncScheduleInput | None
    """The Schedule to write; None when it says `synced` already."""
    invalid_message: str | None
    """The message of an `InvalidRayCronJobSpec` Warning to record, if one is due."""
    suspended_event: bool
    """Record `SuspendedRayCronJob`: the RayCronJob has just been suspended."""


def headline(snap: CronJobSnapshot) -> str:
    """The RayCronJob's state in a word: Invalid, Suspended or Scheduled."""
    if snap.wanted is None:
        return INVALID
    return SUSPENDED if snap.suspend else SCHEDULED


def plan_pass(ref: ObjectRef, snap: CronJobSnapshot, state: RayCronJobState) -> Pass:
    """The pass for a RayCronJob that exists and is not being deleted."""
    word = headline(snap)
    note = {INVALID: NOTE_INVALID, SUSPENDED: NOTE_SUSPENDED}.get(word, "")
    wanted = snap.wanted
    if wanted is None and state.synced is not None:
        wanted = state.synced.wanted  # an invalid spec keeps the times the Schedule has
    synced = Synced(wanted=wanted, paused=word != SCHEDULED, note=note)
    sync = None
    if state.resync or synced != state.synced:
        sync = SyncScheduleInput(
            ref=ref,
            wanted=snap.wanted,
            paused=synced.paused,
            note=note,
            since=snap.last_schedule_time or snap.created_at,
        )
    invalid = None
    if word == INVALID and state.reported_generation != snap.generation:
        invalid = f"{ref.namespace}/{ref.name}: " + "; ".join(snap.violations)
    return Pass(
        headline=word,
        synced=synced,
        sync=sync,
        invalid_message=invalid,
        suspended_event=word == SUSPENDED and state.headline != SUSPENDED,
    )


def skipped_message(ref: ObjectRef, result: SyncScheduleResult) -> str | None:
    """The message of a `SkippedMissedTicks` Warning, if a sync left missed ticks out."""
    if not result.skipped or result.made_up is None:
        return None
    count = f"{result.skipped:,}"
    if result.skipped >= COUNTED_AT_MOST:
        count += " or more"
    return (
        f"{ref.namespace}/{ref.name}: {count} missed ticks before "
        f"{format_time(result.made_up)} were skipped; only those since are made up (the newest "
        f"{MAX_MADE_UP} at most, and none older than the {ANNOTATION_CATCHUP_WINDOW} annotation "
        "allows)"
    )


def refused_message(ref: ObjectRef, tick: datetime, rayjob: str, refusal: str) -> str:
    """The message of a `FailedToCreateRayJob` Warning: the API server refused the tick's RayJob."""
    return (
        f"{ref.namespace}/{ref.name}: the RayJob {rayjob} of the tick at {format_time(tick)} "
        f"was refused, the tick is given up: {refusal}"
    )


def given_up_message(ref: ObjectRef, tick: datetime, attempts: int, failure: str) -> str:
    """The message of a `FailedToCreateRayJob` Warning: the tick's RayJob could not be created.

    `failure` is the kind of the last failure (`KubeUnavailable`…), not its text: the text of an
    unexpected failure might quote anything.
    """
    return (
        f"{ref.namespace}/{ref.name}: the RayJob of the tick at {format_time(tick)} was not "
        f"created in {attempts} attempts (the last failed with {failure}), the tick is given up"
    )
