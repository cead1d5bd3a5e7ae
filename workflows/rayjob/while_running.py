"""The Running state: where the Ray job, the submitter and the clocks meet (J7–J13).

KubeRay derives the outcome from two state machines polled every 3 s, the submitter's and the
dashboard's, and needs both to agree (P2). Here the rules are applied in a fixed order, with
the Ray job's own terminal status first: once Ray says SUCCEEDED, FAILED or STOPPED (and the
submitter, if there is one, has finished), that is the outcome. Then the submitter's failure,
the 30 s submitter-finished timeout, and finally what to ask Ray next.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from activities.rayjob.contract import RayJobView
from crds.enums import (
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    JobSubmissionMode,
    RayClusterConditionType,
)
from crds.rayjob import RayJobStatus
from workflows.rayjob import actions as act
from workflows.rayjob import deadlines, naming
from workflows.rayjob.facts import Facts, Step, fail, move, stay
from workflows.rayjob.status import whole_seconds, with_ray_times

Deploy = JobDeploymentStatus
Reason = JobFailedReason
Mode = JobSubmissionMode

HAS_SUBMITTER = (Mode.K8S_JOB, Mode.SIDECAR)
CLUSTER_CATCH_UP = timedelta(seconds=5)
"""How long a SidecarMode job's end waits for its cluster's status to show the exited sidecar."""


def decide_running(facts: Facts, now: datetime) -> Step:
    """Running: deadlines first, then the outcome, then the next question for Ray."""
    guard = _clocks(facts, now)
    if guard is not None:
        return guard
    status = facts.status
    cluster = facts.cluster
    view = facts.attempt.ray_job
    if cluster is not None and cluster.exists:
        # As KubeRay, the cluster's status is copied along with Ray's answer, never alone: a
        # pass that submits, or waits for the first answer, writes no status for it.
        if view is not None and view.found:
            status = status.model_copy(update={"ray_cluster_status": cluster.status})
        if cluster.dashboard_url:  # what the cluster's own head Service says, not what was
            status = status.model_copy(update={"dashboard_url": cluster.dashboard_url})
    if view is not None and view.found:
        status = _copy_job(status, view)
    facts = replace(facts, status=status)
    step = _outcome(facts, now)
    if step is None:
        step = _observe(facts, now)
    if not naming.uses_selector(facts.spec) and not facts.attempt.head_service:
        name = facts.status.ray_cluster_name or ""
        step.actions.insert(0, act.EnsureHeadService(cluster_name=name))
        step.attempt = step.attempt.model_copy(update={"head_service": True})
    return step


def _clocks(facts: Facts, now: datetime) -> Step | None:
    """activeDeadlineSeconds, the transition grace period and the status-check timeout."""
    spec, status = facts.spec, facts.status
    if deadlines.passed(deadlines.active_deadline(spec, status), now):
        message = (
            f"The RayJob has passed the activeDeadlineSeconds. StartTime: {status.start_time}. "
            f"ActiveDeadlineSeconds: {spec.active_deadline_seconds}"
        )
        return fail(facts, Reason.DEADLINE_EXCEEDED, message)
    options = facts.options
    if deadlines.passed(deadlines.transition_grace_deadline(status, options), now):
        to = Deploy.FAILED if status.job_status == JobStatus.FAILED else Deploy.COMPLETE
        message = (
            "JobDeploymentStatus does not transition to Complete or Failed within the grace "
            "period after JobStatus reaches a terminal state."
        )
        reason = Reason.TRANSITION_GRACE_PERIOD_EXCEEDED
        return move(facts, to, f"{reason}: {message}", reason=reason, message=message)
    since = status.job_status_check_failure_start_time
    if deadlines.passed(deadlines.status_check_deadline(status, options), now):
        message = (
            f"Job status checks have been failing since {since}; exceeded timeout of "
            f"{options.status_check_timeout_seconds}s"
        )
        return fail(facts, Reason.STATUS_CHECK_TIMEOUT_EXCEEDED, message)
    return None


def _copy_job(status: RayJobStatus, view: RayJobView) -> RayJobStatus:
    return status.model_copy(
        update={
            "job_status": view.status,
            "message": view.message or status.message,
            "ray_job_info": with_ray_times(status, view.start_time_ms, view.end_time_ms),
        }
    )


def _outcome(facts: Facts, now: datetime) -> Step | None:
    """A decided outcome: the Ray job ended, or the submitter failed or gave up (J9, J11)."""
    status, submitter = facts.status, facts.submitter
    job_status = status.job_status or JobStatus.NEW
    needs_submitter = facts.mode in HAS_SUBMITTER
    finished_at = submitter.finished_at if submitter is not None else None
    if job_status.is_terminal and (not needs_submitter or finished_at is not None):
        if finished_at is not None and _cluster_behind(facts, finished_at, now):
            waiting = "the RayCluster's status to show the sidecar's exit"
            return stay(facts, waiting, wake_at=finished_at + CLUSTER_CATCH_UP)
        if job_status == JobStatus.FAILED:
            return fail(facts, Reason.APP_FAILED, status.message or "the Ray job failed")
        return move(facts, Deploy.COMPLETE, f"Ray job {status.job_id} {job_status}")
    if facts.mode == Mode.SIDECAR and facts.cluster is not None and not facts.cluster.head_pod:
        return fail(facts, Reason.APP_FAILED, "Ray head pod not found.")
    if needs_submitter and submitter is not None and submitter.failed:
        if job_status == JobStatus.FAILED:
            return fail(facts, Reason.APP_FAILED, status.message or "the Ray job failed")
        message = (
            f"Job submission has failed. Reason: {submitter.reason}. Message: {submitter.message}"
        )
        return fail(facts, Reason.SUBMISSION_FAILED, message)
    gave_up = deadlines.passed(deadlines.submitter_finished_deadline(status, finished_at), now)
    if needs_submitter and not job_status.is_terminal and gave_up:
        message = (
            f"The RayJob submitter finished at {finished_at} but the ray job did not reach "
            f"terminal state within {int(deadlines.SUBMITTER_FINISHED_TIMEOUT.seconds)}s"
        )
        reason = Reason.TRANSITION_GRACE_PERIOD_EXCEEDED
        return fail(facts, reason, message, job_status=JobStatus.FAILED)
    return None


def _cluster_behind(facts: Facts, finished_at: datetime, now: datetime) -> bool:
    """A SidecarMode job ended, but the status to copy still has the head pod Ready.

    The exited sidecar leaves the head pod not Ready for good; KubeRay's last copy of the
    cluster's status, made when it sees the exit, shows that. The cluster's own workflow
    writes it moments after the exit, and its write nudges this one: wait for it, briefly.
    """
    if not facts.sidecar_catch_up or facts.mode != Mode.SIDECAR or facts.cluster is None:
        return False
    if now >= finished_at + CLUSTER_CATCH_UP:
        return False
    conditions = facts.cluster.status.conditions if facts.cluster.status else None
    ready = [c for c in conditions or [] if c.type == RayClusterConditionType.HEAD_POD_READY]
    return bool(ready) and ready[0].status == "True"


def _observe(facts: Facts, now: datetime) -> Step:
    """No outcome yet: decide what to ask Ray, or what to wait for."""
    status, attempt, view = facts.status, facts.attempt, facts.attempt.ray_job
    job_id, url = status.job_id or "", status.dashboard_url or ""
    cluster = status.ray_cluster_name or ""
    since = status.job_status_check_failure_start_time
    if view is not None:
        # The failure clock runs from the first unanswered call to the first answer (J13).
        since = (since or whole_seconds(now)) if not view.reachable else None
        status = status.model_copy(update={"job_status_check_failure_start_time": since})
        facts = replace(facts, status=status)
    if facts.mode == Mode.HTTP and not attempt.submitted:
        step = stay(facts, f"Ray to accept job {job_id}")
        step.actions.append(act.SubmitJob(cluster_name=cluster, job_id=job_id))
        return step
    if view is None:
        return _poll(facts, f"the first status of Ray job {job_id}")
    if not view.reachable:
        why = f": {view.error}" if view.error else ""
        return _poll(facts, f"the dashboard at {url} to answer (failing since {since}{why})")
    if not view.found:
        return _not_found(facts)
    facts = replace(facts, attempt=attempt.model_copy(update={"job_seen": True}))
    job_status = status.job_status or JobStatus.NEW
    if job_status.is_terminal:
        # Terminal is final (P2): no more polling, only the submitter can still matter.
        return stay(facts, f"the submitter of job {job_id} to finish (Ray says {job_status})")
    return _poll(facts, f"Ray job {job_id} ({job_status or 'NEW'})")


def _not_found(facts: Facts) -> Step:
    """Ray has no record of the job: submit it (HTTP), or decide whether it was lost (P3)."""
    status, attempt = facts.status, facts.attempt
    job_id, cluster = status.job_id or "", status.ray_cluster_name or ""
    submitter = facts.submitter
    if facts.mode == Mode.HTTP:
        note = f"Ray has no record of job {job_id} (head restarted?): submitting it again"
        step = stay(facts, f"Ray to accept job {job_id} again")
        step.actions.append(act.SubmitJob(cluster_name=cluster, job_id=job_id, resubmit=True))
        step.notes.append(note)
        return step
    if facts.mode in HAS_SUBMITTER and submitter is not None and submitter.finished_at:
        message = "Submitter completed but Ray job not found in RayCluster."
        return fail(facts, Reason.APP_FAILED, message)
    if attempt.job_seen:
        message = f"Ray has no record of job {job_id} any more (the head restarted without it)"
        return fail(facts, Reason.APP_FAILED, message)
    return _poll(facts, f"Ray job {job_id} to be submitted")


def _poll(facts: Facts, waiting: str) -> Step:
    step = stay(facts, waiting)
    step.poll = True
    return step
