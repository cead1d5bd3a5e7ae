"""KubeRay's RayJob operator variables in the pure decisions (J12, J13, J16).

The options reach these functions from the read activity's snapshot; here they are given
directly. Unset, every decision is KubeRay's default one (the replay tests hold the
workflow to that).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from activities.rayjob.contract import ClusterView, JobOperatorOptions
from crds.enums import DeletionPolicyType as P
from crds.enums import JobDeploymentStatus as D
from crds.enums import JobFailedReason as R
from crds.enums import JobStatus as J
from crds.rayjob import RayJobStatusInfo
from tests.workflows.rayjob.test_rules import T0, s, spec, status
from workflows.rayjob import deadlines, deletion, machine
from workflows.rayjob.facts import Facts
from workflows.rayjob.state import Attempt

CLUSTER = ClusterView(name="c", status=None)
DELETE_SELF = JobOperatorOptions(delete_rayjob_cr_after_job_finishes=True)


@pytest.mark.parametrize(
    ("fields", "delete_self", "expect"),
    [
        pytest.param({"shutdownAfterJobFinishes": True}, False, P.DELETE_CLUSTER, id="default"),
        pytest.param({"shutdownAfterJobFinishes": True}, True, P.DELETE_SELF, id="delete-cr"),
        pytest.param(
            {
                "deletionStrategy": {
                    "deletionRules": [
                        {
                            "policy": "DeleteCluster",
                            "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 30},
                        }
                    ]
                }
            },
            True,
            P.DELETE_CLUSTER,
            id="rules-unaffected",
        ),
        pytest.param({}, True, None, id="no-shutdown-no-deletion"),
    ],
)
def test_delete_rayjob_cr_turns_shutdown_into_delete_self(
    fields: dict[str, Any], delete_self: bool, expect: P | None
) -> None:
    job = spec(ttlSecondsAfterFinished=30, **fields)
    final = status(job_deployment_status=D.COMPLETE, job_status=J.SUCCEEDED, end_time=T0)
    assert deletion.next_deletion(job, final, CLUSTER, s(29), delete_self).run is None
    step = deletion.next_deletion(job, final, CLUSTER, s(30), delete_self)
    assert (step.run.policy if step.run else None) == expect


def test_the_machine_takes_delete_self_from_the_facts() -> None:
    facts = Facts(
        name="train",
        spec=spec(shutdownAfterJobFinishes=True),
        status=status(job_deployment_status=D.COMPLETE, job_status=J.SUCCEEDED, end_time=T0),
        attempt=Attempt(number=1),
        cluster=CLUSTER,
        options=DELETE_SELF,
    )
    step = machine.decide(facts, s(1), random.Random(0))
    assert [type(a).__name__ for a in step.actions] == ["ApplyDeletionRule"]
    assert getattr(step.actions[0], "policy", None) == P.DELETE_SELF


def test_the_two_timeouts_move_their_deadlines() -> None:
    options = JobOperatorOptions(transition_grace_period_seconds=20, status_check_timeout_seconds=9)
    ended = status(
        job_deployment_status=D.RUNNING,
        job_status=J.SUCCEEDED,
        ray_job_info=RayJobStatusInfo(end_time=s(5)),
        job_status_check_failure_start_time=s(7),
    )
    default = deadlines.deadlines(spec(), ended)
    assert (default.transition_grace, default.status_check) == (s(305), s(307))
    found = deadlines.deadlines(spec(), ended, None, options)
    assert (found.transition_grace, found.status_check) == (s(25), s(16))
    assert found.earliest() == s(16)


def _running(options: JobOperatorOptions, **fields: Any) -> Facts:
    return Facts(
        name="train",
        spec=spec(),
        status=status(job_deployment_status=D.RUNNING, job_id="j", **fields),
        attempt=Attempt(number=1),
        cluster=CLUSTER,
        options=options,
    )


def test_a_shortened_status_check_timeout_fails_at_its_end() -> None:
    options = JobOperatorOptions(status_check_timeout_seconds=60)
    facts = _running(options, job_status_check_failure_start_time=s(0))
    assert machine.decide(facts, s(59), random.Random(0)).status.job_deployment_status == D.RUNNING
    step = machine.decide(facts, s(60), random.Random(0))
    assert step.status.job_deployment_status == D.FAILED
    assert step.status.reason == R.STATUS_CHECK_TIMEOUT_EXCEEDED
    assert step.status.message and step.status.message.endswith("exceeded timeout of 60s")


def test_a_shortened_grace_period_completes_at_its_end() -> None:
    options = JobOperatorOptions(transition_grace_period_seconds=10)
    facts = _running(options, job_status=J.SUCCEEDED, ray_job_info=RayJobStatusInfo(end_time=s(0)))
    waiting = machine.decide(facts, s(9), random.Random(0))
    assert waiting.status.job_deployment_status == D.RUNNING and waiting.wake_at == s(10)
    step = machine.decide(facts, s(10), random.Random(0))
    assert step.status.job_deployment_status == D.COMPLETE
    assert step.status.reason == R.TRANSITION_GRACE_PERIOD_EXCEEDED
