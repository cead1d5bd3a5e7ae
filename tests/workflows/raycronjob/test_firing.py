"""A firing ends: a RayJob the API server refuses or does not answer for is given up, told.

On the time-skipping server (a firing needs no Schedule: started by hand, it is for now), with
the RayJob's creation a fake that answers each attempt as told.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.kube.errors import KubeUnavailable
from activities.raycronjob import contract
from crds.common import format_time
from crds.refs import ObjectRef
from worker.running import strict_sandbox_runner
from workflows.activity_calls import FIRING
from workflows.raycronjob.firing import REFUSED_ERROR, RayCronJobFiringWorkflow

REF = ObjectRef(kind="RayCronJob", namespace="ns", name="cron", uid="u")
QUOTA = (
    '403 Forbidden: rayjobs.ray.io "cron-29000000" is forbidden: exceeded quota: rayjobs, '
    "requested: count/rayjobs.ray.io=1, used: count/rayjobs.ray.io=2, limited: "
    "count/rayjobs.ray.io=2"
)


@dataclass
class Creation:
    """Answers each attempt to create the tick's RayJob with the next outcome (the last repeats)."""

    outcomes: list[contract.FiringResult | Exception]
    attempts: list[contract.CreateScheduledJobInput] = field(default_factory=list)
    events: list[contract.EventSpec] = field(default_factory=list)

    def activities(self) -> list[Any]:
        @activity.defn(name=contract.CREATE_SCHEDULED_RAYJOB.name)
        async def create(params: contract.CreateScheduledJobInput) -> contract.FiringResult:
            self.attempts.append(params)
            outcome = self.outcomes[min(len(self.attempts), len(self.outcomes)) - 1]
            if isinstance(outcome, Exception):
                raise outcome
            return outcome

        @activity.defn(name=contract.RECORD_EVENT.name)
        async def record(params: contract.RecordEventInput) -> None:
            self.events.append(params.event)

        return [create, record]

    @property
    def tick(self) -> str:
        return format_time(self.attempts[0].scheduled_at)


async def fire(env: WorkflowEnvironment, creation: Creation) -> str:
    queue = f"firing-{uuid.uuid4()}"
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=[RayCronJobFiringWorkflow],
        activities=creation.activities(),
        workflow_runner=strict_sandbox_runner(),
    ):
        return await env.client.execute_workflow(
            RayCronJobFiringWorkflow.run,
            contract.FiringInput(ref=REF),
            id=f"raycronjob-firing/{uuid.uuid4()}",
            task_queue=queue,
        )


async def test_a_refused_rayjob_is_asked_for_once_and_told(env: WorkflowEnvironment) -> None:
    refused = contract.FiringResult(rayjob="cron-29000000", refused=QUOTA)
    creation = Creation([refused])
    with pytest.raises(WorkflowFailureError) as failed:
        await fire(env, creation)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == REFUSED_ERROR
    assert len(creation.attempts) == 1
    [event] = creation.events
    assert (event.type, event.reason) == ("Warning", "FailedToCreateRayJob")
    assert event.message == (
        f"ns/cron: the RayJob cron-29000000 of the tick at {creation.tick} was refused, the "
        f"tick is given up: {QUOTA}"
    )


async def test_an_api_server_that_does_not_answer_is_asked_a_bounded_number_of_times(
    env: WorkflowEnvironment,
) -> None:
    creation = Creation([KubeUnavailable("503 ServiceUnavailable: etcd leader changed", 503)])
    with pytest.raises(WorkflowFailureError):
        await fire(env, creation)
    assert len(creation.attempts) == FIRING.retry.maximum_attempts == 10
    [event] = creation.events
    assert (event.type, event.reason) == ("Warning", "FailedToCreateRayJob")
    assert event.message == (
        f"ns/cron: the RayJob of the tick at {creation.tick} was not created in 10 attempts "
        "(the last failed with KubeUnavailable), the tick is given up"
    )


async def test_a_passing_failure_is_retried_and_tells_nothing(env: WorkflowEnvironment) -> None:
    created = contract.FiringResult(rayjob="cron-29000000", created=True)
    creation = Creation([KubeUnavailable("connection refused"), created])
    assert await fire(env, creation) == "RayJob ns/cron-29000000 created"
    assert len(creation.attempts) == 2 and creation.events == []
