"""How the RayService workflows call activities: timeouts and retry policies in one place.

Kubernetes calls retry without end (an API server comes back); dashboard calls retry a few
times and then fail to the workflow, which treats a Ray cluster that does not answer as "not
healthy yet" and decides again on the next pass instead of blocking on it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.kube.vocabulary import EventType
    from activities.rayservice import contract as io
    from crds.refs import ObjectRef

T = TypeVar("T")

_K8S_TIMEOUT = timedelta(seconds=60)
_K8S_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
)
_RAY_TIMEOUT = timedelta(seconds=30)
_RAY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=3,
)
HEARTBEAT = timedelta(seconds=30)
WAIT_BOUND = timedelta(seconds=60)
"""How long one `wait_serve_healthy` polls before it reports back (an abort waits at most this)."""

_RAY_ACTIVITIES = {io.APPLY_SERVE_CONFIG, io.READ_SERVE_STATUS}


async def call(name: str, arg: object, result_type: type[T], summary: str) -> T:
    """Run one activity and return its result."""
    ray = name in _RAY_ACTIVITIES
    result: T = await workflow.execute_activity(
        name,
        arg,
        result_type=result_type,
        start_to_close_timeout=_RAY_TIMEOUT if ray else _K8S_TIMEOUT,
        retry_policy=_RAY_RETRY if ray else _K8S_RETRY,
        summary=summary,
    )
    return result


async def run(name: str, arg: object, summary: str) -> None:
    """Run one activity that returns nothing."""
    ray = name in _RAY_ACTIVITIES
    await workflow.execute_activity(
        name,
        arg,
        start_to_close_timeout=_RAY_TIMEOUT if ray else _K8S_TIMEOUT,
        retry_policy=_RAY_RETRY if ray else _K8S_RETRY,
        summary=summary,
    )


async def wait_healthy(
    ref: ObjectRef, cluster: str, consecutive: int, bound: timedelta
) -> io.ServeHealth:
    """Poll one cluster's Serve status inside a heartbeating activity, not one per poll."""
    bound = max(min(bound, WAIT_BOUND), timedelta(seconds=1))
    result: io.ServeHealth = await workflow.execute_activity(
        io.WAIT_SERVE_HEALTHY,
        io.WaitServeHealthyInput(
            ref=ref, cluster=cluster, consecutive=consecutive, bound_seconds=bound.total_seconds()
        ),
        result_type=io.ServeHealth,
        start_to_close_timeout=bound + timedelta(seconds=30),
        heartbeat_timeout=HEARTBEAT,
        retry_policy=_RAY_RETRY,
        summary=f"wait until {cluster}'s Serve apps all run ({consecutive} polls in a row)",
    )
    return result


async def event(ref: ObjectRef, kind: EventType, reason: str, message: str) -> None:
    """Record a Kubernetes Event on the RayService."""
    record = io.RecordEventInput(
        ref=ref, event=io.EventSpec(type=kind, reason=reason, message=message)
    )
    await run(io.RECORD_EVENT, record, f"record Event {reason}")
