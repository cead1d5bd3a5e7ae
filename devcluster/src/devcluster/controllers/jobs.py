"""The batch/v1 Job controller: run a pod template to completion, within limits.

KubeRay's RayJob runs `ray job submit` in a Job and reads its `Complete`/`Failed` conditions,
and kubectl shows `succeeded`; this is kube-controller-manager's job controller for the
non-indexed Jobs those are: pods named `<job>-<5 random>` with the job-name and controller-uid
labels, a replacement after each failure (with the exponential pod-failure backoff) until
`backoffLimit` failures, `activeDeadlineSeconds`, and the terminal conditions in the order a
1.31+ server writes them (`SuccessCriteriaMet`/`FailureTarget` first, then `Complete`/
`Failed`). Not here: indexed completions, suspend, pod failure/success policies, TTL.

`decide` is pure and table-tested; `JobController` reads the store and applies its plan.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from devcluster.controllers import pods, reconciling
from devcluster.controllers.reconciling import Key
from devcluster.handler import Handler
from devcluster.store import PODS, Event

JsonObject = dict[str, Any]
JOBS = "batch/jobs"
_FINISHED = ("Complete", "Failed")
_FAILING = ("FailureTarget", "Failed")
_SUCCEEDING = ("SuccessCriteriaMet", "Complete")
_MAX_BACKOFF = 360.0
_BACKOFF_LIMIT = "Job has reached the specified backoff limit"
_DEADLINE = "Job was active longer than specified deadline"
_COMPLETED = "Reached expected number of succeeded pods"


@dataclass
class JobPlan:
    """What the controller should do for one Job now."""

    status: JsonObject
    create: int = 0
    delete: list[str] = field(default_factory=list)
    requeue: float | None = None


def rfc3339(moment: datetime) -> str:
    """Format a time as Kubernetes timestamps are written."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> datetime | None:
    """Parse a Kubernetes timestamp, or return None."""
    if not text:
        return None
    return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)


def _condition(kind: str, reason: str, message: str, now: datetime) -> JsonObject:
    stamp = rfc3339(now)
    return {
        "type": kind,
        "status": "True",
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def is_finished(job: JsonObject) -> bool:
    """Return whether the Job has its terminal condition."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c.get("type") in _FINISHED and c.get("status") == "True" for c in conditions)


def failures(job: JsonObject, job_pods: list[JsonObject]) -> int:
    """Count failed pods, and container restarts when the template restarts in place."""
    template_spec = job["spec"].get("template", {}).get("spec") or {}
    counted = sum(pods.phase(p) == "Failed" for p in job_pods)
    if template_spec.get("restartPolicy") == "OnFailure":
        counted += sum(pods.restarts(p) for p in job_pods)
    return max(counted, int((job.get("status") or {}).get("failed") or 0))


def _last_failure(job_pods: list[JsonObject]) -> datetime | None:
    times: list[datetime] = []
    for pod in job_pods:
        if pods.phase(pod) != "Failed":
            continue
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            finished = ((status.get("state") or {}).get("terminated") or {}).get("finishedAt")
            if moment := parse_time(finished):
                times.append(moment)
    return max(times, default=None)


def _backoff_wait(failed: int, last: datetime | None, now: datetime, base: float) -> float:
    # The controller waits base * 2^(failures-1), capped, after the last failure.
    if failed == 0 or last is None or base <= 0:
        return 0.0
    delay = min(base * 2 ** (failed - 1), _MAX_BACKOFF)
    return max(0.0, (last + timedelta(seconds=delay) - now).total_seconds())


def _wanted_active(spec: JsonObject, succeeded: int, active: int) -> int:
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions", 1 if "parallelism" not in spec else None)
    if completions is None:  # a work queue: once one pod succeeds, start no more
        return parallelism if succeeded == 0 else min(active, parallelism)
    return max(0, min(parallelism, int(completions) - succeeded))


def _complete(spec: JsonObject, succeeded: int, active: int) -> bool:
    completions = spec.get("completions", 1 if "parallelism" not in spec else None)
    if completions is None:
        return succeeded > 0 and active == 0
    return succeeded >= int(completions)


def _terminal(
    spec: JsonObject, succeeded: int, failed: int, active: int, left: float | None, now: datetime
) -> JsonObject | None:
    """Return the status fields of a Job that has just failed or completed, else None."""
    if failed > int(spec.get("backoffLimit", 6)) or (left is not None and left <= 0):
        reason = "DeadlineExceeded" if left is not None and left <= 0 else "BackoffLimitExceeded"
        message = _DEADLINE if reason == "DeadlineExceeded" else _BACKOFF_LIMIT
        return {"conditions": [_condition(t, reason, message, now) for t in _FAILING]}
    if _complete(spec, succeeded, active):
        conditions = [_condition(t, "CompletionsReached", _COMPLETED, now) for t in _SUCCEEDING]
        return {"conditions": conditions, "completionTime": rfc3339(now)}
    return None


def decide(job: JsonObject, job_pods: list[JsonObject], now: datetime, backoff: float) -> JobPlan:
    """Return the pods to create and delete and the status to write for one Job.

    Args:
        job: the stored Job.
        job_pods: the pods it controls.
        now: the current time.
        backoff: base delay before replacing a failed pod (Kubernetes uses 10s).
    """
    status = copy.deepcopy(job.get("status") or {})
    active = sorted((p for p in job_pods if pods.is_active(p)), key=pods.creation_order)
    if is_finished(job):
        gave_up = any(c.get("type") == "Failed" for c in status.get("conditions") or [])
        return JobPlan(status, delete=[p["metadata"]["name"] for p in active] if gave_up else [])
    spec = job["spec"]
    start = parse_time(status.get("startTime")) or now
    status["startTime"] = rfc3339(start)
    succeeded = max(
        sum(pods.phase(p) == "Succeeded" for p in job_pods), int(status.get("succeeded") or 0)
    )
    failed = failures(job, job_pods)
    deadline = spec.get("activeDeadlineSeconds")
    left = None if deadline is None else (start - now).total_seconds() + int(deadline)
    names = [p["metadata"]["name"] for p in active]
    if terminal := _terminal(spec, succeeded, failed, len(active), left, now):
        status.update(terminal, active=0, ready=0, failed=failed)
        # Either way no pod may keep running: a failed Job's, or one past its completions.
        return JobPlan(_counted(status, succeeded), delete=names)
    wanted = _wanted_active(spec, succeeded, len(active))
    plan = JobPlan(status, requeue=left)
    wait = _backoff_wait(failed, _last_failure(job_pods), now, backoff)
    if wanted > len(active) and wait > 0:
        plan.requeue = wait if left is None else min(wait, left)
    else:
        plan.create = max(0, wanted - len(active))
    plan.delete = [p["metadata"]["name"] for p in active[wanted:]]
    kept = active[:wanted]
    status.update(active=len(kept) + plan.create, ready=sum(pods.is_ready(p) for p in kept))
    status["failed"] = failed
    plan.status = _counted(status, succeeded)
    return plan


def _counted(status: JsonObject, succeeded: int) -> JsonObject:
    # Like the real controller, leave zero counts out of the object.
    status["succeeded"] = succeeded
    for key in ("active", "succeeded", "failed"):
        if not status.get(key):
            status.pop(key, None)
    status.setdefault("uncountedTerminatedPods", {})
    return status


def pod_labels(job: JsonObject) -> dict[str, str]:
    """Return the labels the controller adds to each pod of a Job."""
    name, uid = job["metadata"]["name"], job["metadata"]["uid"]
    return {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }


class JobController:
    """Reconciles batch/v1 Jobs against their pods."""

    resources = (JOBS, PODS)

    def __init__(self, backoff: float = 10.0) -> None:
        self.backoff = backoff

    def keys_for(self, handler: Handler, event: Event) -> Iterable[Key]:
        """A Job's own events and those of the pods it controls."""
        meta = event.obj["metadata"]
        if event.resource == JOBS:
            return [(meta.get("namespace", ""), meta["name"])]
        owner = reconciling.owner_key(event.obj, "Job")
        return [owner] if owner else []

    def reconcile(self, handler: Handler, key: Key) -> float | None:
        """Create and delete pods and write status for one Job."""
        store = handler.store
        job = store.get(JOBS, *key)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return None
        job_pods = reconciling.owned_by(store.objects(PODS, key[0]), job["metadata"]["uid"])
        plan = decide(job, job_pods, datetime.now(UTC), self.backoff)
        for name in plan.delete:
            if (pod := store.get(PODS, key[0], name)) is not None:
                reconciling.delete(handler, PODS, pod)
        owner = reconciling.controller_ref({**job, "apiVersion": "batch/v1", "kind": "Job"})
        for _ in range(plan.create):
            body = pods.from_template(
                job["spec"].get("template") or {},
                owner,
                pod_labels(job),
                generateName=f"{key[1]}-",
            )
            reconciling.create(handler, PODS, key[0], body)
        reconciling.write_status(handler, JOBS, job, plan.status)
        return plan.requeue
