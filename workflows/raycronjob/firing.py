"""One firing of a RayCronJob's Schedule: create the RayJob of the tick.

Temporal starts this workflow at each tick of the Schedule (`activities.raycronjob.schedules`)
and gives it the tick's time as the `TemporalScheduledStartTime` search attribute; a made-up
tick gets the time it should have fired at. The RayJob's name is derived from that time, so a
firing run twice creates one RayJob.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from activities.raycronjob import contract
    from workflows.activity_calls import execute

SCHEDULED_START = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
"""Set by Temporal on every workflow a Schedule starts."""


@workflow.defn(name="RayCronJobFiring")
class RayCronJobFiringWorkflow:
    """Create the RayJob of one tick of a RayCronJob."""

    @workflow.run
    async def run(self, params: contract.FiringInput) -> str:
        """Returns what the firing did, in a line."""
        # Started by hand (not by the Schedule), the firing is for now.
        scheduled_at = workflow.info().typed_search_attributes.get(SCHEDULED_START)
        scheduled_at = scheduled_at or workflow.now()
        request = contract.CreateScheduledJobInput(ref=params.ref, scheduled_at=scheduled_at)
        result = await execute(
            contract.CREATE_SCHEDULED_RAYJOB,
            request,
            summary=f"create the RayJob of {scheduled_at.isoformat()}",
        )
        if result.skipped:
            return f"no RayJob: {result.skipped}"
        verb = "created" if result.created else "found (created before)"
        return f"RayJob {params.ref.namespace}/{result.rayjob} {verb}"
