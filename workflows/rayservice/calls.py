"""The RayService workflows' two compound calls: waiting for Serve health, recording Events.

Every other call goes through `workflows.activity_calls` directly; a Ray cluster that does not
answer is "not healthy yet" to these workflows, which decide again on the next pass.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.kube.vocabulary import EventType
    from activities.rayservice import contract
    from crds.refs import ObjectRef
    from workflows.activity_calls import RAY, execute

HEARTBEAT = timedelta(seconds=30)
WAIT_BOUND = timedelta(seconds=60)
"""How long one `wait_serve_healthy` polls before it reports back (an abort waits at most this)."""


async def wait_healthy(
    ref: ObjectRef, cluster: str, consecutive: int, bound: timedelta
) -> contract.ServeHealth:
    """Poll one cluster's Serve status inside a heartbeating activity, not one per poll."""
    bound = max(min(bound, WAIT_BOUND), timedelta(seconds=1))
    return await execute(
        contract.WAIT_SERVE_HEALTHY,
        contract.WaitServeHealthyInput(
            ref=ref, cluster=cluster, consecutive=consecutive, bound_seconds=bound.total_seconds()
        ),
        summary=f"wait until {cluster}'s Serve apps all run ({consecutive} polls in a row)",
        policy=RAY.within(bound + timedelta(seconds=30), HEARTBEAT),
    )


async def event(ref: ObjectRef, kind: EventType, reason: str, message: str) -> None:
    """Record a Kubernetes Event on the RayService."""
    record = contract.RecordEventInput(
        ref=ref, event=contract.EventSpec(type=kind, reason=reason, message=message)
    )
    await execute(contract.RECORD_EVENT, record, summary=f"record Event {reason}")


async def serve_config_event(ref: ObjectRef, cluster: str) -> None:
    """`UpdatedServeApplications`: a Serve config was submitted to `cluster`, as KubeRay says."""
    message = f"Updated serve applications to the RayCluster {ref.namespace}/{cluster}"
    await event(ref, EventType.NORMAL, "UpdatedServeApplications", message)
