"""RayJob status bookkeeping that KubeRay does around its state switch (J21, J27).

`settle` is what KubeRay does after every pass (`checkBackoffLimitAndUpdateStatusIfNeeded`
plus the endTime rule of `updateRayJobStatus`): count the attempt that just ended, turn a
retryable failure into Retrying, and stamp `endTime` when the deployment becomes terminal.
`status_changed` decides whether a write is worth it. Times are cut to whole seconds, as
metav1.Time stores them, so the status in the workflow equals the one read back after a
continue-as-new and deadlines derived from it do not move.
"""

from __future__ import annotations

from datetime import UTC, datetime

from crds.enums import JobDeploymentStatus, JobFailedReason, JobStatus
from crds.rayjob import RayJobSpec, RayJobStatus, RayJobStatusInfo

Deploy = JobDeploymentStatus

NOT_RETRIED = (JobFailedReason.DEADLINE_EXCEEDED, JobFailedReason.STATUS_CHECK_TIMEOUT_EXCEEDED)


def whole_seconds(moment: datetime) -> datetime:
    """`moment` as metav1.Time keeps it."""
    return moment.replace(microsecond=0)


def settle(
    spec: RayJobSpec, previous: RayJobStatus, new: RayJobStatus, now: datetime
) -> RayJobStatus:
    """Count a finished attempt, decide on a retry, stamp endTime (KubeRay's end of pass)."""
    out = new.model_copy()
    entered = out.job_deployment_status != previous.job_deployment_status
    failed, succeeded = out.failed or 0, out.succeeded or 0
    if entered and out.job_deployment_status == Deploy.FAILED:
        failed += 1
    if (
        entered
        and out.job_deployment_status == Deploy.COMPLETE
        and out.job_status == JobStatus.SUCCEEDED
    ):
        succeeded += 1
    out.failed, out.succeeded = failed, succeeded
    if _retryable(spec, out):
        out.job_deployment_status = Deploy.RETRYING
    elif entered and out.job_deployment_status and out.job_deployment_status.is_terminal:
        out.end_time = whole_seconds(now)
    return out


def _retryable(spec: RayJobSpec, status: RayJobStatus) -> bool:
    if status.job_deployment_status != Deploy.FAILED or spec.backoff_limit is None:
        return False
    if status.reason in NOT_RETRIED:
        return False
    return (status.failed or 0) < spec.backoff_limit + 1


def reset_attempt(status: RayJobStatus, next_state: JobDeploymentStatus) -> RayJobStatus:
    """Forget the torn-down attempt (KubeRay's Suspending/Retrying branch)."""
    return status.model_copy(
        update={
            "ray_cluster_status": None,
            "ray_cluster_name": None,
            "dashboard_url": None,
            "job_id": None,
            "message": None,
            "reason": None,
            "ray_job_info": None,
            "job_status_check_failure_start_time": None,
            "job_status": JobStatus.NEW,
            "job_deployment_status": next_state,
        }
    )


def with_ray_times(status: RayJobStatus, start_ms: int, end_ms: int) -> RayJobStatusInfo | None:
    """`rayJobInfo` from the dashboard's millisecond timestamps (0 means unset)."""
    info = status.ray_job_info or RayJobStatusInfo()
    if start_ms:
        info = info.model_copy(update={"start_time": _from_ms(start_ms)})
    if end_ms:
        info = info.model_copy(update={"end_time": _from_ms(end_ms)})
    return info if (info.start_time or info.end_time) else status.ray_job_info


def _from_ms(ms: int) -> datetime:
    return whole_seconds(datetime.fromtimestamp(ms / 1000, tz=UTC))


def _comparable(status: RayJobStatus | None) -> dict[str, object]:
    if status is None:
        return {}
    dumped = status.model_dump(mode="json", exclude_none=True, exclude={"observed_generation"})
    cluster = dumped.get("ray_cluster_status")
    if isinstance(cluster, dict):
        cluster.pop("last_update_time", None)
    return dumped


def status_changed(old: RayJobStatus | None, new: RayJobStatus) -> bool:
    """Whether a write is worth it: anything but observedGeneration and the cluster's clock."""
    return _comparable(old) != _comparable(new)
