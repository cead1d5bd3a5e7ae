"""KubeRay's RayJob state machine as a pure transition function (docs/kuberay-parity.md).

`decide(facts, now, rng)` looks at the spec, the current status, what the pass observed and
the attempt's memory, and returns the next status, the actions to take and what the job now
waits for. One small function per jobDeploymentStatus, chosen from `HANDLERS`; `TRANSITIONS`
lists every edge each may take, and the tests hold the handlers to it. Nothing here reads a
clock or does I/O (KubeRay's guards call `time.Now()` inline, `rayjob_controller.go:1236`).

Where KubeRay's behaviour is a known pain point this machine does better, on purpose:
a terminal Ray status, once observed, is final (P2); a Ray job that was known and then
vanished fails the attempt instead of leaving it Running forever, except in HTTPMode, which
re-submits the same submission id (P3); and one attempt is torn down completely before the
next begins (P15).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from activities.kube.vocabulary import EventType
from activities.rayjob.contract import JobEventReason
from crds.enums import JobDeploymentStatus, JobFailedReason, JobStatus, JobSubmissionMode
from workflows.rayjob import actions as act
from workflows.rayjob import deadlines, deletion, naming
from workflows.rayjob.facts import Facts, Step, fail, move, stay
from workflows.rayjob.state import Attempt
from workflows.rayjob.status import reset_attempt, whole_seconds
from workflows.rayjob.while_running import decide_running

Deploy = JobDeploymentStatus
Reason = JobFailedReason
Mode = JobSubmissionMode


# --- one function per state ---------------------------------------------------------------------


def _new(facts: Facts, now: datetime, rng: random.Random) -> Step:
    """Name the attempt and start its clock before anything exists (J2, J3, J26)."""
    status = facts.status
    alphabet = facts.name_alphabet
    job_id = status.job_id or naming.job_id(facts.name, facts.spec, rng, alphabet)
    cluster = status.ray_cluster_name or naming.cluster_name(facts.name, facts.spec, rng, alphabet)
    fresh = not status.ray_cluster_name and not naming.uses_selector(facts.spec)
    attempt = Attempt(number=facts.attempt.number + 1, cluster_to_create=fresh)
    step = move(
        facts,
        Deploy.INITIALIZING,
        f"attempt {attempt.number}: job id {job_id or '(set by the user)'}, cluster {cluster}",
        job_id=job_id,
        ray_cluster_name=cluster,
        job_status=status.job_status or JobStatus.NEW,
        start_time=whole_seconds(now),
    )
    step.attempt = attempt
    if not facts.has_finalizer:
        step.actions.append(act.AddFinalizer())
    return step


def _pre_running_guards(facts: Facts, now: datetime, with_active: bool) -> Step | None:
    spec, status = facts.spec, facts.status
    if with_active and deadlines.passed(deadlines.active_deadline(spec, status), now):
        message = (
            f"The RayJob has passed the activeDeadlineSeconds. StartTime: {status.start_time}. "
            f"ActiveDeadlineSeconds: {spec.active_deadline_seconds}"
        )
        return fail(facts, Reason.DEADLINE_EXCEEDED, message)
    if deadlines.passed(deadlines.pre_running_deadline(spec, status), now):
        message = (
            "The RayJob has passed the preRunningDeadlineSeconds. "
            f"StartTime: {status.start_time}. "
            f"PreRunningDeadlineSeconds: {spec.pre_running_deadline_seconds}"
        )
        return fail(facts, Reason.PRE_RUNNING_DEADLINE_EXCEEDED, message)
    return None


def _initializing(facts: Facts, now: datetime, rng: random.Random) -> Step:
    """Create or find the cluster, wait until it is ready, then start the job (J4, J5, J14)."""
    if facts.spec.suspend:
        return move(facts, Deploy.SUSPENDING, "suspend requested while initializing")
    guard = _pre_running_guards(facts, now, with_active=True)
    if guard is not None:
        return guard
    name = facts.status.ray_cluster_name or ""
    cluster = facts.cluster
    if cluster is None or not cluster.exists:
        return _missing_cluster(facts, name)
    # Runs before the patch copied the cluster's status on every pass while Initializing.
    if facts.cluster_status_early:
        status = facts.status.model_copy(update={"ray_cluster_status": cluster.status})
        facts = replace(facts, status=status)
    # The address is always the one the cluster's own head Service gives, read this pass: a
    # dashboardURL already in the status (written before this workflow ran, by anyone) is
    # never taken as it is.
    # A quick job can finish in SidecarMode before the cluster is ever `ready`: its
    # terminated sidecar makes the head pod not Ready for good, so waiting would hang.
    sidecar_done = facts.mode == Mode.SIDECAR and (
        facts.submitter is not None and facts.submitter.finished_at is not None
    )
    if not cluster.ready and not sidecar_done:
        # KubeRay v1.7 shows the cluster a job waits for: its status, copied while it is not
        # ready (then along with Ray's answers, `while_running`).
        status = facts.status.model_copy(update={"ray_cluster_status": cluster.status})
        state = (cluster.status.state if cluster.status else None) or "provisioning"
        return stay(replace(facts, status=status), f"cluster {name} to be ready (state: {state})")
    if not cluster.dashboard_url:
        refused = f" ({cluster.head_service_problem})" if cluster.head_service_problem else ""
        return stay(facts, f"the head Service of cluster {name}{refused}")
    url = cluster.dashboard_url
    if facts.mode == Mode.INTERACTIVE:
        return move(
            facts, Deploy.WAITING, "cluster ready; waiting for spec.jobId", dashboard_url=url
        )
    step = move(facts, Deploy.RUNNING, f"cluster {name} ready at {url}", dashboard_url=url)
    if facts.mode == Mode.K8S_JOB and (facts.submitter is None or not facts.submitter.exists):
        step.actions.append(
            act.CreateSubmitter(cluster_name=name, job_id=facts.status.job_id or "")
        )
    return step


def _missing_cluster(facts: Facts, name: str) -> Step:
    if naming.uses_selector(facts.spec):
        message = (
            f"RayCluster {name} set in the clusterSelector is not found. "
            "It must be created manually"
        )
        step = stay(facts, f"RayCluster {name} (clusterSelector) to exist")
        step.actions.append(
            act.RecordEvent(
                type=EventType.WARNING, reason=JobEventReason.RAY_CLUSTER_NOT_FOUND, message=message
            )
        )
        return step
    step = stay(facts, f"cluster {name} to be created")
    step.actions.append(act.CreateCluster(cluster_name=name, job_id=facts.status.job_id or ""))
    return step


def _waiting(facts: Facts, now: datetime, rng: random.Random) -> Step:
    """InteractiveMode: wait for the user's spec.jobId (J8)."""
    guard = _pre_running_guards(facts, now, with_active=False)
    if guard is not None:
        return guard
    if not facts.spec.job_id:
        return stay(facts, "spec.jobId to be set (InteractiveMode)")
    return move(
        facts, Deploy.RUNNING, f"tracking job {facts.spec.job_id}", job_id=facts.spec.job_id
    )


def _running(facts: Facts, now: datetime, rng: random.Random) -> Step:
    if facts.spec.suspend:
        return move(facts, Deploy.SUSPENDING, "suspend requested while running")
    return decide_running(facts, now)


def _tear_down(facts: Facts, now: datetime, rng: random.Random) -> Step:
    """Suspending / Retrying: delete cluster and submitter, wait until gone, reset (J21, J22)."""
    selector = naming.uses_selector(facts.spec)
    cluster, submitter = facts.cluster, facts.submitter
    cluster_left = not selector and cluster is not None and not cluster.gone
    submitter_left = facts.mode == Mode.K8S_JOB and submitter is not None and submitter.exists
    if cluster_left or submitter_left:
        name = facts.status.ray_cluster_name
        step = stay(
            facts,
            f"attempt {facts.attempt.number}'s cluster {name} and submitter to be deleted",
            busy=True,
        )
        step.actions.append(
            act.DeleteAttempt(
                cluster_name=None if selector else name,
                delete_cluster=cluster_left,
                delete_submitter=submitter_left,
            )
        )
        return step
    suspending = facts.status.job_deployment_status == Deploy.SUSPENDING
    target = Deploy.SUSPENDED if suspending else Deploy.NEW
    status = reset_attempt(facts.status, target)
    note = "suspended: attempt torn down" if suspending else "retrying: attempt torn down"
    return Step(status=status, attempt=facts.attempt, again=True, notes=[note])


def _suspended(facts: Facts, now: datetime, rng: random.Random) -> Step:
    if facts.spec.suspend:
        return stay(facts, "spec.suspend to become false (resume)")
    return move(facts, Deploy.NEW, "resumed: a new attempt starts", job_status=JobStatus.NEW)


def _finished(facts: Facts, now: datetime, rng: random.Random) -> Step:
    """Complete / Failed: run the cleanup rules as their TTLs fall due (J16–J18)."""
    plan = deletion.next_deletion(
        facts.spec,
        facts.status,
        facts.cluster,
        now,
        delete_self=facts.options.delete_rayjob_cr_after_job_finishes,
    )
    waiting = (
        f"the next cleanup rule at {plan.next_at:%H:%M:%S}"
        if plan.next_at
        else "nothing (finished)"
    )
    step = stay(facts, waiting, wake_at=plan.next_at)
    if plan.run is not None:
        step.actions.append(
            act.ApplyDeletionRule(
                policy=plan.run.policy,
                cluster_name=facts.status.ray_cluster_name,
                source=plan.run.source,
            )
        )
        step.again = True
    return step


def _validation_failed(facts: Facts, now: datetime, rng: random.Random) -> Step:
    return stay(facts, "nothing: ValidationFailed is final (delete and re-create the RayJob)")


Handler = Callable[[Facts, datetime, random.Random], Step]

TEARDOWN = frozenset({Deploy.SUSPENDING, Deploy.RETRYING})
"""The states `_tear_down` decides: the only ones that wait for a deleted cluster's last pod,
so the only ones whose reads count its pods."""

HANDLERS: dict[JobDeploymentStatus, Handler] = {
    Deploy.NEW: _new,
    Deploy.INITIALIZING: _initializing,
    Deploy.WAITING: _waiting,
    Deploy.RUNNING: _running,
    **dict.fromkeys(TEARDOWN, _tear_down),
    Deploy.SUSPENDED: _suspended,
    Deploy.COMPLETE: _finished,
    Deploy.FAILED: _finished,
    Deploy.VALIDATION_FAILED: _validation_failed,
}

TRANSITIONS: dict[JobDeploymentStatus, frozenset[JobDeploymentStatus]] = {
    Deploy.NEW: frozenset({Deploy.INITIALIZING}),
    Deploy.INITIALIZING: frozenset(
        {Deploy.INITIALIZING, Deploy.SUSPENDING, Deploy.FAILED, Deploy.WAITING, Deploy.RUNNING}
    ),
    Deploy.WAITING: frozenset({Deploy.WAITING, Deploy.FAILED, Deploy.RUNNING}),
    Deploy.RUNNING: frozenset({Deploy.RUNNING, Deploy.SUSPENDING, Deploy.COMPLETE, Deploy.FAILED}),
    Deploy.SUSPENDING: frozenset({Deploy.SUSPENDING, Deploy.SUSPENDED}),
    Deploy.RETRYING: frozenset({Deploy.RETRYING, Deploy.NEW}),
    Deploy.SUSPENDED: frozenset({Deploy.SUSPENDED, Deploy.NEW}),
    Deploy.COMPLETE: frozenset({Deploy.COMPLETE}),
    Deploy.FAILED: frozenset({Deploy.FAILED}),
    Deploy.VALIDATION_FAILED: frozenset({Deploy.VALIDATION_FAILED}),
}
"""Every edge a handler may take (Failed → Retrying is `status.settle`'s, after the pass)."""


def decide(facts: Facts, now: datetime, rng: random.Random) -> Step:
    """The next status, the actions and what to wait for, given one pass's facts."""
    current = facts.status.job_deployment_status or Deploy.NEW
    step = HANDLERS[current](facts, now, rng)
    borrowed_pending = step.status.job_deployment_status in (Deploy.INITIALIZING, Deploy.WAITING)
    if borrowed_pending and naming.uses_selector(facts.spec):
        # A borrowed cluster is not owned by the RayJob, so none of its changes is signalled
        # here: look again every few seconds, as KubeRay's requeue does.
        step.busy = True
    if step.wake_at is None:
        submitter_end = facts.submitter.finished_at if facts.submitter else None
        step.wake_at = deadlines.deadlines(
            facts.spec, step.status, submitter_end, facts.options
        ).earliest()
    return step


def validation_failed(facts: Facts, violations: list[str]) -> Step:
    """An invalid RayJob: say why, with field paths, and never create anything (J29)."""
    message = "; ".join(violations)
    status = facts.status.model_copy(
        update={
            "job_deployment_status": Deploy.VALIDATION_FAILED,
            "reason": Reason.VALIDATION_FAILED,
            "message": message,
        }
    )
    step = Step(status=status, attempt=facts.attempt, waiting="a valid RayJob spec")
    if (
        facts.status.job_deployment_status != Deploy.VALIDATION_FAILED
        or facts.status.message != message
    ):
        step.actions.append(
            act.RecordEvent(
                type=EventType.WARNING, reason=_event_reason(violations), message=message
            )
        )
        step.notes.append(f"invalid: {message}")
    return step


def _event_reason(violations: list[str]) -> str:
    if any(v.startswith("metadata") for v in violations):
        return JobEventReason.INVALID_METADATA
    if all(v.startswith("status") for v in violations):
        return JobEventReason.INVALID_STATUS
    return JobEventReason.INVALID_SPEC
