"""Pure table tests: deadlines, deletion rules, status settling (KubeRay J11–J21)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from activities.rayjob.contract import ClusterView
from crds.enums import DeletionPolicyType as P
from crds.enums import JobDeploymentStatus as D
from crds.enums import JobFailedReason as R
from crds.enums import JobStatus as J
from crds.rayjob import RayJobSpec, RayJobStatus, RayJobStatusInfo
from workflows.rayjob import deadlines, deletion
from workflows.rayjob.status import reset_attempt, settle, status_changed

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def s(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def spec(**fields: Any) -> RayJobSpec:
    return RayJobSpec.model_validate({"entrypoint": "x", **fields})


def status(**fields: Any) -> RayJobStatus:
    return RayJobStatus(start_time=T0, **fields)


@pytest.mark.parametrize(
    ("state", "fields", "expect"),
    [
        pytest.param(D.INITIALIZING, {}, {"active": s(60), "pre_running": s(10)}, id="init"),
        pytest.param(D.WAITING, {}, {"pre_running": s(10)}, id="waiting"),
        pytest.param(D.RUNNING, {}, {"active": s(60)}, id="running"),
        pytest.param(
            D.RUNNING,
            {"job_status": J.SUCCEEDED, "ray_job_info": RayJobStatusInfo(end_time=s(5))},
            {"active": s(60), "transition_grace": s(305)},
            id="grace-after-ray-end",
        ),
        pytest.param(
            D.RUNNING,
            {"job_status_check_failure_start_time": s(7)},
            {"active": s(60), "status_check": s(307)},
            id="status-check",
        ),
        pytest.param(D.COMPLETE, {}, {}, id="terminal-no-clocks"),
    ],
)
def test_deadlines_per_state(state: D, fields: dict[str, Any], expect: dict[str, Any]) -> None:
    found = deadlines.deadlines(
        spec(activeDeadlineSeconds=60, preRunningDeadlineSeconds=10),
        status(job_deployment_status=state, **fields),
    )
    assert {k: v for k, v in found.model_dump().items() if v} == expect


def test_submitter_finished_gives_30_seconds() -> None:
    found = deadlines.deadlines(spec(), status(job_deployment_status=D.RUNNING), s(100))
    assert found.submitter_finished == s(130) and found.earliest() == s(130)


def test_deadline_passes_at_its_instant() -> None:
    assert deadlines.passed(s(10), s(10)) and not deadlines.passed(s(10), s(9.999))
    assert not deadlines.passed(None, s(10))


# --- deletion ------------------------------------------------------------------------------------

CLUSTER = ClusterView(name="c")
THREE_STAGE = {
    "deletionStrategy": {
        "deletionRules": [
            {"policy": p, "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": t}}
            for p, t in [("DeleteCluster", 35), ("DeleteSelf", 55), ("DeleteWorkers", 15)]
        ]
    }
}
DONE = status(job_deployment_status=D.COMPLETE, job_status=J.SUCCEEDED, end_time=T0)


@pytest.mark.parametrize(
    ("now", "cluster", "run", "next_at"),
    [
        pytest.param(s(0), CLUSTER, None, s(15), id="0s-nothing-due"),
        pytest.param(s(15), CLUSTER, P.DELETE_WORKERS, s(35), id="15s-workers"),
        pytest.param(
            s(20), CLUSTER.model_copy(update={"workers_suspended": True}), None, s(35), id="done"
        ),
        pytest.param(s(35), CLUSTER, P.DELETE_CLUSTER, s(55), id="35s-most-impactful"),
        pytest.param(
            s(40), CLUSTER.model_copy(update={"exists": False}), None, s(55), id="cluster-gone"
        ),
        pytest.param(s(55), None, P.DELETE_SELF, None, id="55s-self"),
    ],
)
def test_three_stage_rules_in_order(
    now: datetime, cluster: ClusterView | None, run: P | None, next_at: datetime | None
) -> None:
    step = deletion.next_deletion(spec(**THREE_STAGE), DONE, cluster, now)
    assert (step.run.policy if step.run else None) == run
    assert step.next_at == next_at


def test_rules_match_only_their_condition() -> None:
    rules = {
        "deletionStrategy": {
            "deletionRules": [
                {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED"}},
                {"policy": "DeleteSelf", "condition": {"jobDeploymentStatus": "Failed"}},
            ]
        }
    }
    assert deletion.due_rules(spec(**rules), DONE) == []
    failed = status(job_deployment_status=D.FAILED, job_status=J.FAILED, end_time=T0)
    assert [r.policy for r in deletion.due_rules(spec(**rules), failed)] == [
        P.DELETE_CLUSTER,
        P.DELETE_SELF,
    ]


@pytest.mark.parametrize(
    ("fields", "job_status", "expect"),
    [
        pytest.param(
            {"shutdownAfterJobFinishes": True}, J.SUCCEEDED, P.DELETE_CLUSTER, id="shutdown"
        ),
        pytest.param({}, J.SUCCEEDED, None, id="nothing-configured"),
        pytest.param(
            {
                "deletionStrategy": {
                    "onSuccess": {"policy": "DeleteSelf"},
                    "onFailure": {"policy": "DeleteNone"},
                }
            },
            J.SUCCEEDED,
            P.DELETE_SELF,
            id="legacy-success",
        ),
        pytest.param(
            {
                "deletionStrategy": {
                    "onSuccess": {"policy": "DeleteSelf"},
                    "onFailure": {"policy": "DeleteNone"},
                }
            },
            J.FAILED,
            None,
            id="legacy-failure-none",
        ),
        pytest.param(
            {"shutdownAfterJobFinishes": True, "clusterSelector": {"ray.io/cluster": "x"}},
            J.SUCCEEDED,
            None,
            id="selector-never-deletes",
        ),
    ],
)
def test_mechanisms_use_ttl_seconds_after_finished(
    fields: dict[str, Any], job_status: J, expect: P | None
) -> None:
    job = spec(ttlSecondsAfterFinished=30, **fields)
    final = status(job_deployment_status=D.COMPLETE, job_status=job_status, end_time=T0)
    assert deletion.next_deletion(job, final, CLUSTER, s(29)).run is None
    step = deletion.next_deletion(job, final, CLUSTER, s(30))
    assert (step.run.policy if step.run else None) == expect


HUGE = 10**18
"""Seconds a RayJob once held: computing its deletion time raised OverflowError forever."""


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": HUGE}, id="ttl"),
        pytest.param(
            {
                "ttlSecondsAfterFinished": HUGE,
                "deletionStrategy": {
                    "onSuccess": {"policy": "DeleteSelf"},
                    "onFailure": {"policy": "DeleteNone"},
                },
            },
            id="legacy",
        ),
        pytest.param(
            {
                "deletionStrategy": {
                    "deletionRules": [
                        {
                            "policy": "DeleteCluster",
                            "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": HUGE},
                        }
                    ]
                }
            },
            id="rule",
        ),
    ],
)
def test_a_deletion_past_year_9999_never_falls_due(fields: dict[str, Any]) -> None:
    assert deletion.due_rules(spec(**fields), DONE) == []
    step = deletion.next_deletion(spec(**fields), DONE, CLUSTER, s(10**9))
    assert (step.run, step.next_at) == (None, None)


def test_a_deadline_past_year_9999_never_runs_out() -> None:
    running = status(job_deployment_status=D.INITIALIZING)
    found = deadlines.deadlines(
        spec(activeDeadlineSeconds=HUGE, preRunningDeadlineSeconds=HUGE), running
    )
    assert found.earliest() is None


def test_not_finished_means_no_cleanup() -> None:
    running = status(job_deployment_status=D.RUNNING, end_time=T0)
    assert deletion.due_rules(spec(shutdownAfterJobFinishes=True), running) == []


# --- settling: attempts, retries, endTime ------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "failed_before", "reason", "expect"),
    [
        pytest.param(1, 0, R.APP_FAILED, D.RETRYING, id="first-failure-retried"),
        pytest.param(1, 1, R.APP_FAILED, D.FAILED, id="second-failure-final"),
        pytest.param(None, 0, R.APP_FAILED, D.FAILED, id="no-backoff-limit"),
        pytest.param(3, 0, R.DEADLINE_EXCEEDED, D.FAILED, id="deadline-not-retried"),
        pytest.param(3, 0, R.STATUS_CHECK_TIMEOUT_EXCEEDED, D.FAILED, id="status-check-not"),
        pytest.param(3, 0, R.PRE_RUNNING_DEADLINE_EXCEEDED, D.RETRYING, id="pre-running-retried"),
        pytest.param(3, 0, R.SUBMISSION_FAILED, D.RETRYING, id="submission-retried"),
    ],
)
def test_backoff_limit(limit: int | None, failed_before: int, reason: R, expect: D) -> None:
    before = status(job_deployment_status=D.RUNNING, failed=failed_before, succeeded=0)
    after = before.model_copy(update={"job_deployment_status": D.FAILED, "reason": reason})
    out = settle(spec(backoffLimit=limit), before, after, s(9))
    assert out.job_deployment_status == expect and out.failed == failed_before + 1
    assert (out.end_time is not None) == (expect == D.FAILED)


def test_success_counts_and_stamps_end_time() -> None:
    before = status(job_deployment_status=D.RUNNING)
    after = before.model_copy(
        update={"job_deployment_status": D.COMPLETE, "job_status": J.SUCCEEDED}
    )
    out = settle(spec(), before, after, s(9.5))
    assert (out.succeeded, out.failed, out.end_time) == (1, 0, s(9))


def test_reset_attempt_forgets_the_attempt() -> None:
    full = status(job_id="j", ray_cluster_name="c", dashboard_url="u", job_status=J.RUNNING)
    out = reset_attempt(full, D.SUSPENDED)
    assert (out.job_id, out.ray_cluster_name, out.dashboard_url) == (None, None, None)
    assert out.job_status == J.NEW and out.start_time == T0


def test_status_changed_ignores_observed_generation() -> None:
    a = status(observed_generation=1)
    assert not status_changed(a, a.model_copy(update={"observed_generation": 2}))
    assert status_changed(a, a.model_copy(update={"job_status": J.RUNNING}))


def test_a_ray_end_time_near_year_9999_has_no_grace_deadline() -> None:
    # Ray's dashboard (the CR owner's to shape) reported the job's end in the last second.
    end = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    running = status(
        job_deployment_status=D.RUNNING,
        job_status=J.SUCCEEDED,
        ray_job_info=RayJobStatusInfo(end_time=end),
        job_status_check_failure_start_time=end,
    )
    found = deadlines.deadlines(spec(), running, submitter_finished_at=end)
    assert found.earliest() is None
