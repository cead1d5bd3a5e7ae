"""Every clock a RayJob runs against, as absolute times (KubeRay J11–J13, J19, J20).

KubeRay re-reads `time.Now()` inside each guard (`rayjob_controller.go` check*Deadline*), so its
deadlines cannot be tested at a chosen time. Here each deadline is a pure function of the spec,
the status and the submitter's finish time, all of which live in the RayJob status or are read
again after a continue-as-new; the workflow only keeps the earliest one as its next wake-up. A
deadline is "passed" at exactly its instant (`now >= deadline`, as `!time.Now().Before(d)`).
The grace period and the status-check timeout are operator settings (KubeRay's
RAYJOB_* variables); they come from the read activity's snapshot, never from the environment.
Every deadline is computed with `workflows.durations.after`: the times it starts from come from
the CR, its status and Ray's dashboard, any of which may lie near the year 9999.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from activities.rayjob.contract import JobOperatorOptions
from crds.constants import DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS
from crds.enums import JobDeploymentStatus, JobStatus
from crds.rayjob import RayJobSpec, RayJobStatus
from workflows import durations

SUBMITTER_FINISHED_TIMEOUT = timedelta(seconds=DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS)
KUBERAY_DEFAULTS = JobOperatorOptions()
"""The grace period and status-check timeout when no snapshot said otherwise (300 s each)."""

_PRE_RUNNING = (JobDeploymentStatus.INITIALIZING, JobDeploymentStatus.WAITING)
_ACTIVE = (JobDeploymentStatus.INITIALIZING, JobDeploymentStatus.RUNNING)


class Deadlines(BaseModel):
    """The deadlines that apply in the current state; None where a clock is not running."""

    model_config = ConfigDict(frozen=True)

    active: datetime | None = None
    """`status.startTime + activeDeadlineSeconds` (per attempt: startTime resets in New)."""
    pre_running: datetime | None = None
    """`status.startTime + preRunningDeadlineSeconds`, while Initializing or Waiting."""
    submitter_finished: datetime | None = None
    """Submitter finished + 30 s, while the Ray job is not terminal."""
    transition_grace: datetime | None = None
    """`rayJobInfo.endTime` + grace period (300 s), while the Ray job is terminal but the
    RayJob Running."""
    status_check: datetime | None = None
    """`jobStatusCheckFailureStartTime` + timeout (300 s), while the dashboard keeps failing."""

    def earliest(self) -> datetime | None:
        """The next instant something may change on its own, if any."""
        times = [t for t in self.model_dump().values() if t is not None]
        return min(times) if times else None


def _after(start: datetime | None, seconds: int | None) -> datetime | None:
    if start is None or seconds is None:
        return None
    return durations.after(start, seconds)


def active_deadline(spec: RayJobSpec, status: RayJobStatus) -> datetime | None:
    """When activeDeadlineSeconds runs out for this attempt."""
    if status.job_deployment_status not in _ACTIVE:
        return None
    return _after(status.start_time, spec.active_deadline_seconds)


def pre_running_deadline(spec: RayJobSpec, status: RayJobStatus) -> datetime | None:
    """When preRunningDeadlineSeconds runs out, if the job has not reached Running."""
    if status.job_deployment_status not in _PRE_RUNNING:
        return None
    return _after(status.start_time, spec.pre_running_deadline_seconds)


def submitter_finished_deadline(
    status: RayJobStatus, finished_at: datetime | None
) -> datetime | None:
    """The submitter ended; the Ray job gets 30 s more to become terminal."""
    if status.job_deployment_status != JobDeploymentStatus.RUNNING or finished_at is None:
        return None
    return durations.after(finished_at, SUBMITTER_FINISHED_TIMEOUT)


def transition_grace_period(options: JobOperatorOptions) -> timedelta:
    """RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS as configured."""
    return timedelta(seconds=options.transition_grace_period_seconds)


def status_check_timeout(options: JobOperatorOptions) -> timedelta:
    """RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS as configured."""
    return timedelta(seconds=options.status_check_timeout_seconds)


def transition_grace_deadline(
    status: RayJobStatus, options: JobOperatorOptions = KUBERAY_DEFAULTS
) -> datetime | None:
    """The Ray job ended; the deployment status gets the grace period (300 s) to follow."""
    job_status = status.job_status or JobStatus.NEW
    info = status.ray_job_info
    if status.job_deployment_status != JobDeploymentStatus.RUNNING or not job_status.is_terminal:
        return None
    if info is None or info.end_time is None:
        return None
    return durations.after(info.end_time, transition_grace_period(options))


def status_check_deadline(
    status: RayJobStatus, options: JobOperatorOptions = KUBERAY_DEFAULTS
) -> datetime | None:
    """The dashboard has failed since `jobStatusCheckFailureStartTime`; the timeout ends it."""
    if status.job_deployment_status != JobDeploymentStatus.RUNNING:
        return None
    since = status.job_status_check_failure_start_time
    return None if since is None else durations.after(since, status_check_timeout(options))


def deadlines(
    spec: RayJobSpec,
    status: RayJobStatus,
    submitter_finished_at: datetime | None = None,
    options: JobOperatorOptions = KUBERAY_DEFAULTS,
) -> Deadlines:
    """All deadlines that apply to the RayJob in its current state."""
    return Deadlines(
        active=active_deadline(spec, status),
        pre_running=pre_running_deadline(spec, status),
        submitter_finished=submitter_finished_deadline(status, submitter_finished_at),
        transition_grace=transition_grace_deadline(status, options),
        status_check=status_check_deadline(status, options),
    )


def passed(deadline: datetime | None, now: datetime) -> bool:
    """Whether a deadline exists and `now` has reached it."""
    return deadline is not None and now >= deadline
