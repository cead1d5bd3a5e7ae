"""The RayService workflows' two compound calls: waiting for Serve health, recording Events.

Every other call goes through `workflows.activity_calls` directly; a Ray cluster that does not
answer is "not healthy yet" to these workflows, which decide again on the next pass.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.kube.vocabulary import EventType
    from activities.rayservice import contract as io
    from crds.refs import ObjectRef
    from workflows.activity_calls import RAY, execute

HEARTBEAT = timedelta(seconds=30)
WAIT_BOUND = timedelta(seconds=60)
"""How long one `wait_serve_healthy` polls before it reports back (an abort waits at most this)."""


async def wait_healthy(
    ref: ObjectRef, cluster: str, consecutive: int, bound: timedelta
) -> io.ServeHealth:
    """Poll one cluster's Serve status inside a heartbeating activity, not one per poll."""
    bound = max(min(bound, WAIT_BOUND), timedelta(seconds=1))
    return await execute(
        io.WAIT_SERVE_HEALTHY,
        io.WaitServeHealthyInput(
            ref=ref, cluster=cluster, consecutive=consecutive, bound_seconds=bound.total_seconds()
        ),
        summary=f"wait until {cluster}'s Serve apps all run ({consecutive} polls in a row)",
        policy=RAY.within(bound + timedelta(seconds=30), HEARTBEAT),
    )


async def event(ref: ObjectRef, kind: EventType, reason: str, message: str) -> None:
    """Record a Kubernetes Event on the RayService."""
    record = io.RecordEventInput(
        ref=ref, event=io.EventSpec(type=kind, reason=reason, message=message)
    )
    await execute(io.RECORD_EVENT, record, summary=f"record Event {reason}")
