"""One firing of a RayCronJob's Schedule: create the RayJob of the tick.

Temporal starts this workflow at each tick of the Schedule (`activities.raycronjob.schedules`)
and gives it the tick's time as the `TemporalScheduledStartTime` search attribute; a made-up
tick gets the time it should have fired at. The RayJob's name is derived from that time, so a
firing run twice creates one RayJob.

A firing ends: a RayJob the API server refuses (a quota, RBAC, an invalid object) is not asked
for again, and one it does not answer for is asked a bounded number of times (`FIRING`). Either
way the RayCronJob gets a `FailedToCreateRayJob` Warning and the run fails, so the Schedule's
recent actions show it; the next tick tries again. KubeRay retries a refused create without end.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.kube.vocabulary import EventType
    from activities.raycronjob import contract
    from crds import constants
    from crds.refs import ObjectRef
    from workflows.activity_calls import EVENT, FIRING, execute
    from workflows.raycronjob import decisions

SCHEDULED_START = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
"""Set by Temporal on every workflow a Schedule starts."""
REFUSED_ERROR = "RayJobRefused"
"""The error type a firing whose RayJob the API server refused fails with."""


@workflow.defn(name="RayCronJobFiring")
class RayCronJobFiringWorkflow:
    """Create the RayJob of one tick of a RayCronJob."""

    @workflow.run
    async def run(self, params: contract.FiringInput) -> str:
        """Returns what the firing did, in a line; fails when the tick's RayJob is given up."""
        # Started by hand (not by the Schedule), the firing is for now.
        scheduled_at = workflow.info().typed_search_attributes.get(SCHEDULED_START)
        scheduled_at = scheduled_at or workflow.now()
        request = contract.CreateScheduledJobInput(ref=params.ref, scheduled_at=scheduled_at)
        try:
            result = await execute(
                contract.CREATE_SCHEDULED_RAYJOB,
                request,
                summary=f"create the RayJob of {scheduled_at.isoformat()}",
                policy=FIRING,
            )
        except ActivityError as err:
            attempts = FIRING.retry.maximum_attempts
            failure = _failure_kind(err)
            message = decisions.given_up_message(params.ref, scheduled_at, attempts, failure)
            await _warn(params.ref, message)
            raise
        if result.refused:
            message = decisions.refused_message(
                params.ref, scheduled_at, result.rayjob, result.refused
            )
            await _warn(params.ref, message)
            raise ApplicationError(message, type=REFUSED_ERROR, non_retryable=True)
        if result.skipped:
            return f"no RayJob: {result.skipped}"
        verb = "created" if result.created else "found (created before)"
        return f"RayJob {params.ref.namespace}/{result.rayjob} {verb}"


async def _warn(ref: ObjectRef, message: str) -> None:
    """Record `FailedToCreateRayJob` if the API server takes it: the firing ends either way."""
    event = contract.EventSpec(
        type=EventType.WARNING, reason=constants.EVENT_FAILED_TO_CREATE_RAYJOB, message=message
    )
    try:
        await execute(
            contract.RECORD_EVENT,
            contract.RecordEventInput(ref=ref, event=event),
            summary=f"record Event {constants.EVENT_FAILED_TO_CREATE_RAYJOB}",
            policy=EVENT,
        )
    except ActivityError:
        workflow.logger.warning("no Event for %s: %s", ref, message)


def _failure_kind(err: ActivityError) -> str:
    """What kind of failure the last attempt had: its error type, or its class."""
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.type:
        return cause.type
    return type(cause or err).__name__
