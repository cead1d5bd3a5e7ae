"""Pure table tests of the RayJob state machine: every transition KubeRay's machine makes."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from activities.rayjob.contract import ClusterView, EventSpec, RayJobView, SubmitterView
from crds.enums import JobDeploymentStatus as D
from crds.enums import JobFailedReason as R
from crds.enums import JobStatus as J
from crds.messages import EVENT_MESSAGE_LIMIT, STATUS_MESSAGE_LIMIT
from crds.raycluster import RayClusterStatus
from crds.rayjob import RayJob, RayJobSpec, RayJobStatus, RayJobStatusInfo
from crds.validation import validate
from crds.violations import reported
from workflows.names import KUBERNETES_ALPHABET
from workflows.rayjob import actions as act
from workflows.rayjob import machine, naming
from workflows.rayjob.facts import Facts
from workflows.rayjob.state import Attempt

T0 = datetime(2026, 1, 1, tzinfo=UTC)
READY = ClusterView(name="c", status=RayClusterStatus(state="ready"), dashboard_url="c-svc:8265")
UNREADY = ClusterView(name="c", status=RayClusterStatus(state=""))
SEEN = Attempt(number=1, job_seen=True, head_service=True, submitted=True)


def s(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def facts(state: D, spec: dict[str, Any] | None = None, **fields: Any) -> Facts:
    status_fields = {
        "job_deployment_status": state,
        "start_time": T0,
        "job_id": "train-abcde",
        "ray_cluster_name": "c",
        **fields.pop("status", {}),
    }
    if state in (D.RUNNING,):
        status_fields.setdefault("dashboard_url", "c-svc:8265")
    return Facts(
        name="train",
        spec=RayJobSpec.model_validate({"entrypoint": "x", **(spec or {})}),
        status=RayJobStatus(**status_fields),
        attempt=fields.pop("attempt", SEEN),
        **fields,
    )


def decide(f: Facts, at: float = 1) -> machine.Step:
    return machine.decide(f, s(at), random.Random(7))


def kinds(step: machine.Step) -> list[str]:
    return [type(a).__name__ for a in step.actions]


def test_new_names_the_attempt_before_creating_anything() -> None:
    f = facts(D.NEW, status={"job_id": None, "ray_cluster_name": None}, has_finalizer=False)
    step = decide(f)
    assert step.status.job_deployment_status == D.INITIALIZING
    assert step.status.job_id and step.status.job_id.startswith("train-")
    assert step.status.ray_cluster_name and step.status.ray_cluster_name != step.status.job_id
    assert step.status.start_time == s(1) and step.attempt.number == 2
    assert kinds(step) == ["AddFinalizer"]


def test_new_names_are_drawn_as_kuberay_draws_them() -> None:
    # apimachinery's rand.String, as KubeRay names a RayJob's cluster and job id.
    for seed in range(50):
        f = facts(D.NEW, status={"job_id": None, "ray_cluster_name": None})
        step = machine.decide(f, s(1), random.Random(seed))
        for name in (step.status.job_id, step.status.ray_cluster_name):
            assert name is not None and name.startswith("train-")
            suffix = name.removeprefix("train-")
            assert len(suffix) == 5 and set(suffix) <= set(KUBERNETES_ALPHABET), name


def test_a_workflow_that_began_before_the_patch_draws_its_names_as_then() -> None:
    f = facts(D.NEW, status={"job_id": None, "ray_cluster_name": None})
    legacy = replace(f, name_alphabet=naming.LEGACY_ALPHABET)
    step = machine.decide(legacy, s(1), random.Random(7))
    # What this decision drew with seed 7 before job names followed KubeRay's alphabet.
    assert (step.status.job_id, step.status.ray_cluster_name) == ("train-ujzde", "train-8gxd6")


@pytest.mark.parametrize(
    ("spec", "job_id", "cluster"),
    [
        pytest.param({"jobId": "mine"}, "mine", None, id="spec-job-id"),
        pytest.param(
            {"clusterSelector": {"ray.io/cluster": "shared"}}, None, "shared", id="selector"
        ),
        pytest.param({"submissionMode": "InteractiveMode"}, "", None, id="interactive-no-id"),
    ],
)
def test_new_respects_user_names(
    spec: dict[str, Any], job_id: str | None, cluster: str | None
) -> None:
    step = decide(facts(D.NEW, spec, status={"job_id": None, "ray_cluster_name": None}))
    if job_id is not None:
        assert (step.status.job_id or "") == job_id
    if cluster is not None:
        assert step.status.ray_cluster_name == cluster


@pytest.mark.parametrize(
    ("state", "spec", "fields", "to", "reason", "actions"),
    [
        # Initializing
        pytest.param(
            D.INITIALIZING, {}, {}, D.INITIALIZING, None, ["CreateCluster"], id="i-create"
        ),
        pytest.param(
            D.INITIALIZING, {}, {"cluster": UNREADY}, D.INITIALIZING, None, [], id="i-wait-ready"
        ),
        pytest.param(
            D.INITIALIZING, {}, {"cluster": READY}, D.RUNNING, None, ["CreateSubmitter"], id="i-k8s"
        ),
        pytest.param(
            D.INITIALIZING,
            {"submissionMode": "HTTPMode"},
            {"cluster": READY},
            D.RUNNING,
            None,
            [],
            id="i-http",
        ),
        pytest.param(
            D.INITIALIZING,
            {"submissionMode": "InteractiveMode"},
            {"cluster": READY},
            D.WAITING,
            None,
            [],
            id="i-interactive",
        ),
        pytest.param(D.INITIALIZING, {"suspend": True}, {}, D.SUSPENDING, None, [], id="i-suspend"),
        pytest.param(
            D.INITIALIZING,
            {"activeDeadlineSeconds": 1},
            {},
            D.FAILED,
            R.DEADLINE_EXCEEDED,
            [],
            id="i-active",
        ),
        pytest.param(
            D.INITIALIZING,
            {"preRunningDeadlineSeconds": 1},
            {},
            D.FAILED,
            R.PRE_RUNNING_DEADLINE_EXCEEDED,
            [],
            id="i-prerunning",
        ),
        pytest.param(
            D.INITIALIZING,
            {"clusterSelector": {"ray.io/cluster": "c"}},
            {},
            D.INITIALIZING,
            None,
            ["RecordEvent"],
            id="i-selector-missing",
        ),
        # Waiting
        pytest.param(
            D.WAITING, {"submissionMode": "InteractiveMode"}, {}, D.WAITING, None, [], id="w-no-id"
        ),
        pytest.param(
            D.WAITING,
            {"submissionMode": "InteractiveMode", "jobId": "u"},
            {},
            D.RUNNING,
            None,
            [],
            id="w-id",
        ),
        pytest.param(
            D.WAITING,
            {"submissionMode": "InteractiveMode", "preRunningDeadlineSeconds": 1},
            {},
            D.FAILED,
            R.PRE_RUNNING_DEADLINE_EXCEEDED,
            [],
            id="w-prerunning",
        ),
        # Suspended
        pytest.param(D.SUSPENDED, {"suspend": True}, {}, D.SUSPENDED, None, [], id="s-stay"),
        pytest.param(D.SUSPENDED, {}, {}, D.NEW, None, [], id="s-resume"),
        # Tear-down (atomic suspend; retry waits until gone)
        pytest.param(
            D.SUSPENDING,
            {},
            {"cluster": READY},
            D.SUSPENDING,
            None,
            ["DeleteAttempt"],
            id="sg-delete",
        ),
        pytest.param(
            D.SUSPENDING,
            {},
            {"cluster": READY.model_copy(update={"exists": False, "pods": 1})},
            D.SUSPENDING,
            None,
            ["DeleteAttempt"],
            id="sg-pods-left",
        ),
        pytest.param(D.SUSPENDING, {}, {}, D.SUSPENDED, None, [], id="sg-done"),
        pytest.param(
            D.RETRYING,
            {},
            {"submitter": SubmitterView()},
            D.RETRYING,
            None,
            ["DeleteAttempt"],
            id="r-submitter",
        ),
        pytest.param(D.RETRYING, {}, {}, D.NEW, None, [], id="r-done"),
        pytest.param(
            D.VALIDATION_FAILED, {}, {}, D.VALIDATION_FAILED, None, [], id="validation-final"
        ),
    ],
)
def test_transitions(
    state: D,
    spec: dict[str, Any],
    fields: dict[str, Any],
    to: D,
    reason: R | None,
    actions: list[str],
) -> None:
    step = decide(facts(state, spec, **fields), at=2)
    assert step.status.job_deployment_status == to
    assert step.status.reason == reason
    assert kinds(step) == actions
    assert to in machine.TRANSITIONS[state]


def running(
    spec: dict[str, Any] | None = None, view: RayJobView | None = None, **fields: Any
) -> Facts:
    attempt = SEEN.model_copy(update={"ray_job": view})
    fields.setdefault("cluster", READY)
    return facts(D.RUNNING, spec, attempt=attempt, **fields)


FINISHED = SubmitterView(finished_at=s(0))
FAILED_SUBMITTER = SubmitterView(finished_at=s(0), failed=True, reason="BackoffLimitExceeded")


def view(status: J, **fields: Any) -> RayJobView:
    return RayJobView(
        found=True, status=status, end_time_ms=1000 if status.is_terminal else 0, **fields
    )


@pytest.mark.parametrize(
    ("f", "at", "to", "reason", "poll"),
    [
        pytest.param(running(view=view(J.RUNNING)), 1, D.RUNNING, None, True, id="poll"),
        pytest.param(
            running(view=view(J.SUCCEEDED)), 1, D.RUNNING, None, False, id="k8s-waits-submitter"
        ),
        pytest.param(
            running(view=view(J.SUCCEEDED), submitter=FINISHED),
            1,
            D.COMPLETE,
            None,
            False,
            id="k8s-complete",
        ),
        pytest.param(
            running(view=view(J.FAILED), submitter=FINISHED),
            1,
            D.FAILED,
            R.APP_FAILED,
            False,
            id="k8s-app-failed",
        ),
        pytest.param(
            running({"submissionMode": "HTTPMode"}, view(J.STOPPED)),
            1,
            D.COMPLETE,
            None,
            False,
            id="http-stopped",
        ),
        pytest.param(
            running(view=view(J.RUNNING), submitter=FAILED_SUBMITTER),
            1,
            D.FAILED,
            R.SUBMISSION_FAILED,
            False,
            id="submitter-failed",
        ),
        pytest.param(
            running(view=view(J.RUNNING), submitter=FINISHED),
            29,
            D.RUNNING,
            None,
            True,
            id="submitter-29s",
        ),
        pytest.param(
            running(view=view(J.RUNNING), submitter=FINISHED),
            30,
            D.FAILED,
            R.TRANSITION_GRACE_PERIOD_EXCEEDED,
            False,
            id="submitter-30s",
        ),
        pytest.param(
            running(view=RayJobView(found=False), submitter=FINISHED),
            1,
            D.FAILED,
            R.APP_FAILED,
            False,
            id="submitter-done-no-job",
        ),
        pytest.param(
            running(view=RayJobView(found=False)),
            1,
            D.FAILED,
            R.APP_FAILED,
            False,
            id="k8s-job-lost",
        ),
        pytest.param(
            running(
                {"submissionMode": "SidecarMode"},
                view(J.RUNNING),
                cluster=READY.model_copy(update={"head_pod": False}),
            ),
            1,
            D.FAILED,
            R.APP_FAILED,
            False,
            id="sidecar-no-head",
        ),
        pytest.param(
            running({"activeDeadlineSeconds": 5}, view(J.RUNNING)),
            5,
            D.FAILED,
            R.DEADLINE_EXCEEDED,
            False,
            id="active",
        ),
        pytest.param(
            running(view=view(J.RUNNING), status={"job_status_check_failure_start_time": s(0)}),
            300,
            D.FAILED,
            R.STATUS_CHECK_TIMEOUT_EXCEEDED,
            False,
            id="status-check",
        ),
        pytest.param(
            running(
                view=view(J.SUCCEEDED),
                status={"job_status": J.SUCCEEDED, "ray_job_info": RayJobStatusInfo(end_time=s(0))},
            ),
            300,
            D.COMPLETE,
            R.TRANSITION_GRACE_PERIOD_EXCEEDED,
            False,
            id="grace",
        ),
        pytest.param(
            running({"suspend": True}, view(J.RUNNING)), 1, D.SUSPENDING, None, False, id="suspend"
        ),
    ],
)
def test_running(f: Facts, at: float, to: D, reason: R | None, poll: bool) -> None:
    step = decide(f, at)
    assert (step.status.job_deployment_status, step.status.reason, step.poll) == (to, reason, poll)


def test_unreachable_dashboard_starts_the_failure_clock_once() -> None:
    step = decide(running(view=RayJobView(reachable=False)), at=3)
    assert step.status.job_status_check_failure_start_time == s(3) and step.poll
    assert step.wake_at == s(303)
    back = decide(
        running(view=view(J.RUNNING), status={"job_status_check_failure_start_time": s(3)})
    )
    assert back.status.job_status_check_failure_start_time is None


@pytest.mark.parametrize(
    ("attempt", "expect"),
    [
        pytest.param(Attempt(number=1), ["EnsureHeadService", "SubmitJob"], id="first-submit"),
        pytest.param(
            SEEN.model_copy(update={"ray_job": RayJobView(found=False)}),
            ["SubmitJob"],
            id="resubmit-lost",
        ),
    ],
)
def test_http_submits_only_when_ray_has_no_record(attempt: Attempt, expect: list[str]) -> None:
    step = decide(facts(D.RUNNING, {"submissionMode": "HTTPMode"}, attempt=attempt, cluster=READY))
    assert kinds(step) == expect and step.status.job_deployment_status == D.RUNNING
    submit = step.actions[-1]
    assert isinstance(submit, act.SubmitJob) and submit.job_id == "train-abcde"


def test_finished_job_runs_cleanup_rules() -> None:
    f = facts(
        D.COMPLETE,
        {"shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": 10},
        status={"job_status": J.SUCCEEDED, "end_time": T0},
        cluster=READY,
    )
    assert decide(f, at=9).wake_at == s(10) and not decide(f, at=9).actions
    assert kinds(decide(f, at=10)) == ["ApplyDeletionRule"]


def test_validation_failure_reports_paths_once() -> None:
    f = facts(D.NEW)
    step = machine.validation_failed(f, ["spec.suspend: needs shutdownAfterJobFinishes"])
    assert step.status.job_deployment_status == D.VALIDATION_FAILED
    assert step.status.reason == R.VALIDATION_FAILED and "spec.suspend" in (
        step.status.message or ""
    )
    assert kinds(step) == ["RecordEvent"]
    again = machine.validation_failed(
        Facts(**{**f.__dict__, "status": step.status}),
        ["spec.suspend: needs shutdownAfterJobFinishes"],
    )
    assert kinds(again) == []


def test_validation_failure_of_a_huge_spec_is_bounded_in_status_and_event() -> None:
    # A thousand worker groups, each breaking a rule with a value of a kilobyte.
    groups = [
        {"groupName": "g" * 1000 + str(i), "minReplicas": -1, "template": {}} for i in range(1000)
    ]
    spec = {"rayClusterSpec": {"headGroupSpec": {"template": {}}, "workerGroupSpecs": groups}}
    f = facts(D.NEW, spec)
    violations = reported(validate(RayJob(spec=f.spec)))
    step = machine.validation_failed(f, violations)
    assert len((step.status.message or "").encode()) <= STATUS_MESSAGE_LIMIT
    assert "more violations" in (step.status.message or "")
    [record] = step.actions
    assert isinstance(record, act.RecordEvent)
    event = EventSpec(type=record.type, reason=record.reason, message=record.message)
    assert len(event.message.encode()) <= EVENT_MESSAGE_LIMIT


def test_every_state_has_a_handler_and_edges() -> None:
    assert set(machine.HANDLERS) == set(D) == set(machine.TRANSITIONS)


def test_sidecar_job_that_finished_before_the_cluster_was_ready_is_tracked() -> None:
    """The terminated sidecar keeps the head pod unready forever: go on and read Ray's verdict."""
    unready = UNREADY.model_copy(update={"dashboard_url": "c-svc:8265", "head_pod": True})
    spec = {"submissionMode": "SidecarMode"}
    waiting = decide(facts(D.INITIALIZING, spec, cluster=unready))
    assert waiting.status.job_deployment_status == D.INITIALIZING
    done = SubmitterView(finished_at=s(0))
    step = decide(facts(D.INITIALIZING, spec, cluster=unready, submitter=done))
    assert step.status.job_deployment_status == D.RUNNING
    assert step.status.dashboard_url == "c-svc:8265"


@pytest.mark.parametrize(
    ("spec", "cluster", "busy"),
    [
        pytest.param({"clusterSelector": {"ray.io/cluster": "c"}}, UNREADY, True, id="borrowed"),
        pytest.param({"clusterSelector": {"ray.io/cluster": "c"}}, None, True, id="borrowed-gone"),
        pytest.param({}, UNREADY, False, id="own-cluster-signals"),
    ],
)
def test_a_borrowed_cluster_is_looked_at_every_few_seconds(
    spec: dict[str, Any], cluster: ClusterView | None, busy: bool
) -> None:
    """Regression: a clusterSelector RayJob waited for the 5-minute resync to see its cluster
    ready, because changes of a cluster it does not own are never signalled to it."""
    step = decide(facts(D.INITIALIZING, spec, cluster=cluster))
    assert step.status.job_deployment_status == D.INITIALIZING
    assert step.busy is busy


@pytest.mark.parametrize("early", [False, True], ids=["as-kuberay", "before-the-patch"])
def test_the_cluster_status_is_copied_while_not_ready_then_with_rays_answers(early: bool) -> None:
    """KubeRay v1.7 copies `rayClusterStatus` while the cluster a job waits for is not ready,
    then in Running along with Ray's answer (workflows from before the patch copied it on
    every pass while Initializing)."""
    interactive = {"submissionMode": "InteractiveMode"}
    initializing = facts(D.INITIALIZING, interactive, cluster=READY, cluster_status_early=early)
    waiting = decide(initializing)
    assert waiting.status.job_deployment_status == D.WAITING
    assert (waiting.status.ray_cluster_status is not None) is early

    # Regression: a cluster that stays pending (TPUs, GPUs) showed nothing in the RayJob's
    # status; v1.7.0 shows the cluster's own status (its conditions, desired resources).
    pending = decide(facts(D.INITIALIZING, {}, cluster=UNREADY))
    assert pending.status.job_deployment_status == D.INITIALIZING
    assert pending.status.ray_cluster_status == UNREADY.status is not None

    # In Running, along with Ray's answer, as KubeRay: a pass that submits or still waits
    # for the first answer copies nothing (one status write fewer per job).
    answered = decide(running(view=view(J.RUNNING)))
    assert answered.status.ray_cluster_status == READY.status
    http = {"submissionMode": "HTTPMode"}
    for attempt in (Attempt(number=1), SEEN.model_copy(update={"ray_job": None})):
        unanswered = decide(facts(D.RUNNING, http, cluster=READY, attempt=attempt))
        assert unanswered.status.ray_cluster_status is None


@pytest.mark.parametrize("catch_up", [True, False], ids=["as-kuberay", "before-the-patch"])
def test_a_sidecar_job_ends_with_its_clusters_status_after_the_exit(catch_up: bool) -> None:
    """The exited sidecar leaves the head pod not Ready; KubeRay's last copy of the cluster's
    status shows that. Ours waited for nothing and copied the head pod still Ready."""
    cond = {"type": "HeadPodReady", "lastTransitionTime": T0, "reason": "x", "message": ""}
    head_ready = READY.model_copy(
        update={"status": RayClusterStatus(state="ready", conditions=[cond | {"status": "True"}])}
    )
    sidecar = {"submissionMode": "SidecarMode"}

    def end(cluster: ClusterView, at: float) -> machine.Step:
        f = running(sidecar, view(J.SUCCEEDED), cluster=cluster, submitter=FINISHED)
        return decide(replace(f, sidecar_catch_up=catch_up), at)

    step = end(head_ready, 1)
    if catch_up:
        assert step.status.job_deployment_status == D.RUNNING
        assert step.wake_at == s(5)
    else:
        assert step.status.job_deployment_status == D.COMPLETE
    # The cluster's workflow wrote the exit, or the wait ran out: Complete either way.
    exited = READY.model_copy(
        update={"status": RayClusterStatus(state="ready", conditions=[cond | {"status": "False"}])}
    )
    assert end(exited, 1).status.job_deployment_status == D.COMPLETE
    assert end(head_ready, 5).status.job_deployment_status == D.COMPLETE


FORGED = {"dashboard_url": "victim-head-svc.victim.svc.cluster.local:8265"}
"""A status written before the workflow ran (by anyone), naming an address of its choosing."""


def test_a_dashboard_url_in_the_status_from_before_is_not_taken_as_it_is() -> None:
    http = {"submissionMode": "HTTPMode"}
    waiting = decide(facts(D.INITIALIZING, http, status=FORGED, cluster=UNREADY))
    assert waiting.status.job_deployment_status == D.INITIALIZING
    assert waiting.waiting == "cluster c to be ready (state: provisioning)"
    step = decide(facts(D.INITIALIZING, http, status=FORGED, cluster=READY, attempt=Attempt()))
    assert step.status.job_deployment_status == D.RUNNING
    assert step.status.dashboard_url == "c-svc:8265"
    # Ray is reached by the cluster's name, through the head Service the cluster owns.
    running = replace(facts(D.RUNNING, http, cluster=READY, attempt=Attempt()), status=step.status)
    assert decide(running).actions[-1] == act.SubmitJob(cluster_name="c", job_id="train-abcde")


def test_running_shows_the_address_the_clusters_own_head_service_gives() -> None:
    step = decide(facts(D.RUNNING, status=FORGED, cluster=READY))
    assert step.status.dashboard_url == "c-svc:8265"


def test_a_refused_head_service_is_what_the_job_waits_for() -> None:
    problem = "not calling Service c-head-svc: it is an ExternalName Service"
    refused = READY.model_copy(update={"dashboard_url": None, "head_service_problem": problem})
    step = decide(facts(D.INITIALIZING, cluster=refused))
    assert step.status.job_deployment_status == D.INITIALIZING
    assert step.waiting == f"the head Service of cluster c ({problem})"
