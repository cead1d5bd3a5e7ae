"""How workflows call activities: by typed reference, under one of a few call policies.

An activity is named by its `ActivityRef` (its contract module), so mypy holds the argument
to the activity's input type and the result to its result type. A `CallPolicy` is a timeout
with a retry policy: Kubernetes calls retry without end (an API server comes back), but for a
RayCronJob firing's, which a later tick replaces; Ray
dashboard calls retry a few times and then fail to the workflow, which decides what a Ray
cluster that does not answer means (not healthy yet, a status-check failure) instead of
blocking on it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, TypeVar, cast

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, FailureError

with workflow.unsafe.imports_passed_through():
    from activities.contract import ActivityRef

InputT = TypeVar("InputT")
ResultT = TypeVar("ResultT")


@dataclass(frozen=True)
class CallPolicy:
    """How long one attempt may take and how attempts are retried."""

    timeout: timedelta
    retry: RetryPolicy
    heartbeat: timedelta | None = None

    def within(self, timeout: timedelta, heartbeat: timedelta | None = None) -> CallPolicy:
        """The same retries for a call that runs longer (a wait), heartbeating."""
        return replace(self, timeout=timeout, heartbeat=heartbeat)


KUBE = CallPolicy(
    timedelta(seconds=60),
    RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=30),
    ),
)
"""A Kubernetes API call: retried until the API server answers."""
RAY = CallPolicy(
    timedelta(seconds=30),
    RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=10),
        maximum_attempts=3,
    ),
)
"""A Ray dashboard call of a RayService: three attempts, then the workflow decides."""
RAY_JOB = CallPolicy(
    timedelta(seconds=60),
    RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_attempts=3),
)
"""A Ray dashboard call of a RayJob: three attempts, then the status-check clock decides."""
FIRING = CallPolicy(
    timedelta(seconds=60),
    RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=30),
        maximum_attempts=10,
    ),
)
"""A RayCronJob firing's RayJob: ten attempts (two and a half minutes of waits between them),
then the tick is given up; the next tick tries again. Firings retried without end would pile up
behind an API server that does not answer, one more at every tick."""
EVENT = CallPolicy(
    timedelta(seconds=60), RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=5)
)
"""An Event about a refused signal: best effort, never blocking the workflow for long."""


def _options(ref: ActivityRef[Any, Any], policy: CallPolicy, summary: str) -> dict[str, Any]:
    """The SDK's options for one call of `ref` under `policy`."""
    return {
        "result_type": None if ref.result is type(None) else ref.result,
        "start_to_close_timeout": policy.timeout,
        "heartbeat_timeout": policy.heartbeat,
        "retry_policy": policy.retry,
        "summary": summary,
    }


async def execute(
    ref: ActivityRef[InputT, ResultT], arg: InputT, *, summary: str, policy: CallPolicy = KUBE
) -> ResultT:
    """Run one activity to its end and return its result."""
    result = await workflow.execute_activity(ref.name, arg, **_options(ref, policy, summary))
    return cast(ResultT, result)


LOCAL_ATTEMPTS = 3
"""Attempts a local call makes inside its workflow task before it becomes a scheduled one."""


async def execute_local(
    ref: ActivityRef[InputT, ResultT], arg: InputT, *, summary: str, policy: CallPolicy = KUBE
) -> ResultT:
    """Run one short activity in the workflow task that asks for it (a local activity).

    No dispatch through the server and no workflow task for its result: a short Kubernetes
    call costs the call alone, and its history is a marker, not an activity's three events.
    A local call retries inside the workflow task, which holds the worker (it cannot shut
    down while one retries) and shows nowhere as pending. So it makes a few attempts
    (`LOCAL_ATTEMPTS`); a call whose policy retries without end then goes on as a scheduled
    activity: retried by the server, its last failure on show, the worker free.
    """
    options = _options(ref, policy, summary)
    del options["heartbeat_timeout"]  # a local activity cannot heartbeat
    unbounded = not policy.retry.maximum_attempts
    if unbounded or policy.retry.maximum_attempts > LOCAL_ATTEMPTS:
        options["retry_policy"] = replace(policy.retry, maximum_attempts=LOCAL_ATTEMPTS)
    try:
        result = await workflow.execute_local_activity(ref.name, arg, **options)
    except ActivityError:
        raise
    except FailureError as err:
        if unbounded and not (isinstance(err, ApplicationError) and err.non_retryable):
            return await execute(ref, arg, summary=summary, policy=policy)
        # The SDK raises a local activity's failure itself, a scheduled one's as the cause of
        # an ActivityError; callers handle the latter, whichever way the call ran.
        raise ActivityError(
            f"local activity {ref.name} failed",
            scheduled_event_id=0,
            started_event_id=0,
            identity="",
            activity_type=ref.name,
            activity_id="",
            retry_state=None,
        ) from err
    return cast(ResultT, result)


async def execute_where(
    local: bool,
    ref: ActivityRef[InputT, ResultT],
    arg: InputT,
    *,
    summary: str,
    policy: CallPolicy = KUBE,
) -> ResultT:
    """`execute_local` when `local`, else `execute`: a run keeps the way its history began."""
    if local:
        return await execute_local(ref, arg, summary=summary, policy=policy)
    return await execute(ref, arg, summary=summary, policy=policy)


def start(
    ref: ActivityRef[InputT, ResultT], arg: InputT, *, summary: str, policy: CallPolicy = KUBE
) -> workflow.ActivityHandle[ResultT]:
    """Start one activity; the handle is awaited (or cancelled) by the caller."""
    handle = workflow.start_activity(ref.name, arg, **_options(ref, policy, summary))
    return cast(workflow.ActivityHandle[ResultT], handle)
