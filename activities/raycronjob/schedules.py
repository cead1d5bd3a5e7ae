"""The Temporal Schedule of each RayCronJob: created, updated, paused and deleted with it.

A RayCronJob is a cron schedule; Temporal Schedules are cron schedules run by the server, so
each RayCronJob gets one (its id is the RayCronJob workflow's id) whose action starts the
short `RayCronJobFiring` workflow on the worker's task queue. The server keeps the times: a
worker down at a tick finds the firing waiting when it comes back, a Temporal server down at a
tick makes it up within the catch-up window, and every firing is a workflow in the Temporal UI.

Making up missed ticks is bounded by `contract.MAX_MADE_UP`, both ways it happens: the window
Temporal makes up an outage in, and the backfill a sync asks for when the RayCronJob starts (or
starts again) firing, reach back no further than that many ticks of the schedule at their
closest (`catchup_window`), and no further than the CR's catch-up annotation.

These activities use the worker's own Temporal client (`activity.client()`), and are
idempotent: a create that finds its Schedule updates it, a delete that finds none is done.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio import activity
from temporalio.api.workflowservice.v1 import ListScheduleMatchingTimesRequest
from temporalio.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleBackfill,
    ScheduleDescription,
    ScheduleHandle,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.raycronjob import contract
from crds.refs import ObjectRef
from crds.validation.schedules import shortest_gap

FIRING_WORKFLOW = "RayCronJobFiring"
"""The workflow each firing starts (`workflows.raycronjob.firing`)."""
FIRING_ID_PREFIX = "raycronjob-firing"
"""Firings are `raycronjob-firing/<namespace>/<name>/<uid>-<time>` (Temporal adds the time)."""
T = TypeVar("T")
# The keys the CR workflows are listed by (`workflows.messages`), so a search for a RayCronJob's
# namespace or name finds its firings too. Not its kind: the bridge takes every workflow of a
# kind for a CR workflow.
_NAMESPACE_KEY = SearchAttributeKey.for_keyword("RayNamespace")
_NAME_KEY = SearchAttributeKey.for_keyword("RayName")
_FIELD_MINIMUMS = (0, 0, 1, 1, 0)  # minute, hour, day of month, month, day of week
_JUST_BEFORE = timedelta(milliseconds=1)


def temporal_cron(schedule: str) -> str:
    """A schedule KubeRay's parser accepts, written the way Temporal's parser accepts it too.

    The two read the same five fields alike, but for spellings only KubeRay's (robfig/cron)
    takes: `?` for `*` in any field, `*` or `?` as the start of a range (`*-5` is `0-5` in
    the minute field) and empty items in a list (`1,,2`). Descriptors pass unchanged.
    """
    fields = schedule.split()
    if len(fields) != len(_FIELD_MINIMUMS):
        return schedule
    return " ".join(
        ",".join(_item(item, low) for item in field.split(",") if item)
        for field, low in zip(fields, _FIELD_MINIMUMS, strict=True)
    )


def _item(item: str, low: int) -> str:
    if item == "?" or item.startswith("?/"):
        return "*" + item[1:]
    if item[:2] in ("*-", "?-"):
        return f"{low}{item[1:]}"
    return item


def firing_id(ref: ObjectRef) -> str:
    """The workflow id the Schedule gives its firings, before Temporal appends the time."""
    return f"{FIRING_ID_PREFIX}/{ref.namespace}/{ref.name}/{ref.uid}"


def catchup_window(wanted: contract.ScheduleWanted) -> timedelta:
    """How far back missed ticks are made up: `MAX_MADE_UP` ticks at their closest, or less.

    No two ticks are closer than `shortest_gap`, so a window of `MAX_MADE_UP - 1` gaps (both
    ends count) holds `MAX_MADE_UP` ticks at most: 99 minutes for a schedule every minute,
    about 95 days for a daily one. The CR's annotation narrows it.
    """
    window = (contract.MAX_MADE_UP - 1) * shortest_gap(wanted.cron)
    if wanted.catchup_seconds is not None:
        window = min(window, timedelta(seconds=wanted.catchup_seconds))
    return window


def build_schedule(
    ref: ObjectRef, wanted: contract.ScheduleWanted, state: ScheduleState, task_queue: str
) -> Schedule:
    """The Schedule of a RayCronJob with a valid spec."""
    attributes = TypedSearchAttributes(
        [
            SearchAttributePair(_NAMESPACE_KEY, ref.namespace),
            SearchAttributePair(_NAME_KEY, ref.name),
        ]
    )
    return Schedule(
        action=ScheduleActionStartWorkflow(
            FIRING_WORKFLOW,
            contract.FiringInput(ref=ref),
            id=firing_id(ref),
            task_queue=task_queue,
            typed_search_attributes=attributes,
            static_summary=f"RayJob of RayCronJob {ref.namespace}/{ref.name}",
        ),
        spec=ScheduleSpec(
            cron_expressions=[temporal_cron(wanted.cron)], time_zone_name=wanted.time_zone or None
        ),
        policy=SchedulePolicy(
            # KubeRay creates each tick's RayJob whether or not the last one still runs.
            overlap=ScheduleOverlapPolicy.ALLOW_ALL,
            catchup_window=catchup_window(wanted),
        ),
        state=state,
    )


class ScheduleActivities:
    """RayCronJob Schedules on the worker's Temporal server."""

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration."""
        return [self.sync, self.delete]

    @activity.defn(name=contract.SYNC_SCHEDULE.name)
    async def sync(self, params: contract.SyncScheduleInput) -> contract.SyncScheduleResult:
        """Make the Schedule say what `params` says (`contract.SyncScheduleInput`)."""
        client = activity.client()
        schedule_id = contract.ScheduleRef(ref=params.ref).schedule_id
        handle = client.get_schedule_handle(schedule_id)
        state = ScheduleState(paused=params.paused, note=params.note or None)
        was_paused = await _paused(handle)
        action = contract.SyncScheduleAction.UPDATED
        if was_paused is None:
            if params.wanted is None:
                return contract.SyncScheduleResult(action=contract.SyncScheduleAction.NOTHING)
            task_queue = activity.info().task_queue
            schedule = build_schedule(params.ref, params.wanted, state, task_queue)
            try:
                await _refusing(client.create_schedule(schedule_id, schedule))
                action = contract.SyncScheduleAction.CREATED
            except ScheduleAlreadyRunningError:  # an attempt before this one created it
                was_paused = await _paused(handle)
                if was_paused is None:  # and something deleted it since: try again
                    raise
        if action == contract.SyncScheduleAction.UPDATED:
            await _refusing(self._update(handle, params))
        result = contract.SyncScheduleResult(action=action, paused=params.paused)
        if not params.paused and was_paused is not False:  # created, or unpaused
            await _make_up(handle, params, result)
        return result

    @activity.defn(name=contract.DELETE_SCHEDULE.name)
    async def delete(self, params: contract.ScheduleRef) -> None:
        """Delete the Schedule; none is fine (deleted before, or never created)."""
        handle = activity.client().get_schedule_handle(params.schedule_id)
        try:
            await handle.delete()
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise

    async def _update(self, handle: ScheduleHandle, params: contract.SyncScheduleInput) -> None:
        """One update carries the times and the paused state together.

        Not an update and then a pause: the server's scheduler may apply a pause (a patch)
        before an update sent just before it, and the update's copy of the state then undoes it.
        """
        state = ScheduleState(paused=params.paused, note=params.note or None)
        wanted, task_queue = params.wanted, activity.info().task_queue

        def replace(current: ScheduleUpdateInput) -> ScheduleUpdate:
            schedule = current.description.schedule
            if wanted is None:  # an invalid spec: the times it had
                return ScheduleUpdate(dataclasses.replace(schedule, state=state))
            return ScheduleUpdate(build_schedule(params.ref, wanted, state, task_queue))

        await handle.update(replace)


async def _refusing(call: Awaitable[T]) -> T:
    """`call`, with a Temporal server's refusal of the Schedule as a failure never retried.

    Our validation accepts what KubeRay accepts, and `temporal_cron` writes it so Temporal
    accepts it too; should the server still refuse one, retrying would not change its mind,
    and the workflow reports the refusal on the RayCronJob instead.
    """
    try:
        return await call
    except RPCError as err:
        if err.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
        message = f"the Temporal server refused the RayCronJob's Schedule: {err.message}"
        raise ApplicationError(
            message, type=contract.INVALID_SCHEDULE_ERROR, non_retryable=True
        ) from None


async def described(handle: ScheduleHandle) -> ScheduleDescription | None:
    """The Schedule as the server has it; None when there is none."""
    try:
        return await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise


async def _paused(handle: ScheduleHandle) -> bool | None:
    """Whether the Schedule is paused; None when there is no Schedule."""
    description = await described(handle)
    return None if description is None else description.schedule.state.paused


async def _make_up(
    handle: ScheduleHandle, params: contract.SyncScheduleInput, result: contract.SyncScheduleResult
) -> None:
    """Ask Temporal to fire every tick after `since` up to now, within the catch-up window.

    The tick at `since` itself fired already (it is the last written to the status), hence the
    second after it. A tick fired twice makes the RayJob it made before: the name is the tick's.
    Sets where the made-up ticks begin and how many before them were skipped in `result`.
    """
    if params.since is None or params.wanted is None:
        return
    now = datetime.now(UTC)
    first = params.since + timedelta(seconds=1)
    start = max(first, now - catchup_window(params.wanted))
    if start >= now:
        return
    await handle.backfill(
        ScheduleBackfill(start_at=start, end_at=now, overlap=ScheduleOverlapPolicy.ALLOW_ALL)
    )
    result.made_up = start
    if start > first:
        # The backfill takes the tick at `start`; those before it are the skipped ones.
        result.skipped = await _ticks_between(handle.id, params.since, start - _JUST_BEFORE)


async def _ticks_between(schedule_id: str, after: datetime, until: datetime) -> int:
    """How many ticks the Schedule has after `after` up to `until` (`COUNTED_AT_MOST` at most).

    The server's own list, so what is counted is what it would have fired.
    """
    after_at, until_at = Timestamp(), Timestamp()
    after_at.FromDatetime(after)
    until_at.FromDatetime(until)
    client = activity.client()
    request = ListScheduleMatchingTimesRequest(
        namespace=client.namespace, schedule_id=schedule_id, start_time=after_at, end_time=until_at
    )
    found = await client.workflow_service.list_schedule_matching_times(request)
    return min(len(found.start_time), contract.COUNTED_AT_MOST)
