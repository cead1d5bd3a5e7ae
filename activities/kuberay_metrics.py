"""KubeRay's operator metrics, under KubeRay's names, labels and semantics.

Existing KubeRay Grafana dashboards query `count(kuberay_job_info) by (namespace)`,
`kuberay_cluster_condition_provisioned{condition="false"}` and the like, so the series must
exist exactly while KubeRay's would. KubeRay has two kinds of metric, and so do we:

* **State gauges** (`*_info`, `kuberay_job_deployment_status`, `*_condition_*`): one series of
  value 1 per existing CR, with its current state as a label, rendered at scrape time from
  what the bridge's watchers last saw of each CR (`bridge.state_gauges`). A deleted CR's
  series vanish and a changed state leaves no stale series behind, which a push-style gauge
  (the Temporal SDK's metric meter) cannot do. The bridge serves them: it watches these kinds
  anyway, and it runs once where workers run as several replicas, each of which would count
  every CR again.
* **Duration gauges** (`kuberay_job_execution_duration_seconds`,
  `kuberay_cluster_provisioned_duration_seconds`): set once when the status a controller
  writes makes a transition. The status-writing activities see the old and the new status,
  so they call `job_status_written` / `cluster_status_written` after a successful write (a
  retried write sees no transition and records nothing); the worker that ran the write
  serves the series. As in KubeRay, a CR's duration series are dropped once it is gone: the
  worker's watched copies of the RayClusters and RayJobs tell, at scrape time, without a
  request to the API server.

Workflows stay out of this: they decide statuses; the metrics follow the writes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from activities.kube.informer import Informer
from activities.kube.recent import version_number
from crds.enums import ConditionStatus, JobDeploymentStatus, RayClusterConditionType

Labels = tuple[tuple[str, str], ...]
"""Label pairs in KubeRay's order."""

HELP: dict[str, str] = {
    "kuberay_cluster_provisioned_duration_seconds": (
        "The time, in seconds, when a RayCluster's `RayClusterProvisioned` status transitions "
        "from false (or unset) to true"
    ),
    "kuberay_cluster_info": "Metadata information about RayCluster custom resources",
    "kuberay_cluster_condition_provisioned": "Indicates whether the RayCluster is provisioned",
    "kuberay_job_execution_duration_seconds": (
        "Duration from when the RayJob CR's JobDeploymentStatus transitions from Initializing "
        "to either the Retrying state or a terminal state, such as Complete or Failed. The "
        "Retrying state indicates that the CR previously failed and that spec.backoffLimit is "
        "enabled."
    ),
    "kuberay_job_info": "Metadata information about RayJob custom resources",
    "kuberay_job_deployment_status": "The RayJob's current deployment status",
    "kuberay_service_info": "Metadata information about RayService custom resources",
    "kuberay_service_condition_ready": (
        "Describes whether the RayService is ready. Ready means users can send requests to the "
        "underlying cluster and the number of serve endpoints is greater than 0."
    ),
    "kuberay_service_condition_upgrade_in_progress": (
        "Describes whether the RayService is performing a zero-downtime upgrade."
    ),
}
"""Every family we expose (all are gauges, as in KubeRay), with KubeRay's help text."""

_CLUSTER_DURATION = "kuberay_cluster_provisioned_duration_seconds"
_JOB_DURATION = "kuberay_job_execution_duration_seconds"
_PROVISIONED = RayClusterConditionType.PROVISIONED


@dataclass(frozen=True)
class Sample:
    """One series' value at scrape time."""

    name: str
    labels: Labels
    value: float


def _identity(obj: Mapping[str, Any]) -> Labels:
    meta = obj.get("metadata") or {}
    return (
        ("name", str(meta.get("name", ""))),
        ("namespace", str(meta.get("namespace", ""))),
        ("uid", str(meta.get("uid", ""))),
    )


def condition_true(status: object, kind: str) -> bool:
    """Whether condition `kind` is True; absent is not True (`meta.IsStatusConditionTrue`).

    Args:
        status: A CR's status as the API server sent it; not a mapping: no conditions.
        kind: The condition type.
    """
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return bool(condition.get("status") == ConditionStatus.TRUE)
    return False


def _version(obj: Mapping[str, Any]) -> int:
    """The resourceVersion `obj` was read at, as a number (0: none)."""
    return version_number(str((obj.get("metadata") or {}).get("resourceVersion") or ""))


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _deployment_status(status: Mapping[str, Any] | None) -> str:
    return str((status or {}).get("jobDeploymentStatus") or "")


def job_execution_duration(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], now: datetime
) -> tuple[str, int, float] | None:
    """KubeRay's `kuberay_job_execution_duration_seconds` observation for one status write.

    Emitted when the deployment leaves a non-terminal state for a terminal one (Complete,
    Failed) or for Retrying; measured from `status.startTime` (the attempt's start).

    Args:
        old: The RayJob status before the write (JSON form), None if it had none.
        new: The status written.
        now: The time of the write.

    Returns:
        (job_deployment_status, retry_count, seconds), or None when nothing is observed.
        retry_count is the old status's `failed` count, as in KubeRay.
    """
    before, after = _deployment_status(old), _deployment_status(new)
    if _is_terminal(before):
        return None
    if not (_is_terminal(after) or after == JobDeploymentStatus.RETRYING):
        return None
    started = _timestamp(new.get("startTime"))
    if started is None:
        return None
    retries = int((old or {}).get("failed") or 0)
    return after, retries, (now - started).total_seconds()


def _is_terminal(deployment_status: str) -> bool:
    return deployment_status in (JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED)


def cluster_provisioned_duration(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], created: object, now: datetime
) -> float | None:
    """KubeRay's `kuberay_cluster_provisioned_duration_seconds` observation for one write.

    Emitted when `RayClusterProvisioned` turns True (from False or unset), measured from the
    RayCluster's creationTimestamp.

    Args:
        old: The RayCluster status before the write, None if it had none.
        new: The status written.
        created: `metadata.creationTimestamp` as the API server returned it.
        now: The time of the write.

    Returns:
        Seconds since creation, or None when nothing is observed.
    """
    if condition_true(old, _PROVISIONED) or not condition_true(new, _PROVISIONED):
        return None
    since = _timestamp(created)
    return None if since is None else (now - since).total_seconds()


def render(samples: Iterable[Sample]) -> str:
    """The Prometheus text exposition (format 0.0.4) of `samples`, grouped by family."""
    by_family: dict[str, list[Sample]] = {}
    for sample in samples:
        by_family.setdefault(sample.name, []).append(sample)
    lines: list[str] = []
    for name, members in by_family.items():
        lines.append(f"# HELP {name} {_escape_help(HELP[name])}")
        lines.append(f"# TYPE {name} gauge")
        for sample in members:
            pairs = ",".join(f'{key}="{_escape_label(value)}"' for key, value in sample.labels)
            lines.append(f"{name}{{{pairs}}} {_number(sample.value)}")
    return "".join(f"{line}\n" for line in lines)


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isfinite(value) and value == int(value):
        return str(int(value))
    return repr(value)


class KubeRayMetrics:
    """The duration gauges the status-writing activities set.

    One instance per worker process, shared by the activities (which call the
    `*_status_written` methods) and the metrics endpoint (which calls `collect`).
    """

    def __init__(self) -> None:
        # (family, labels) -> (value, the CR's resourceVersion when it was read); a dict keeps
        # one series per label set, as a GaugeVec.
        self._durations: dict[tuple[str, Labels], tuple[float, int]] = {}

    def job_status_written(
        self, obj: Mapping[str, Any], new: Mapping[str, Any], now: datetime | None = None
    ) -> None:
        """Record what a successful RayJob status write observes.

        Args:
            obj: The RayJob as read before the write (metadata and old status).
            new: The status written (JSON form).
            now: The time of the write; the clock by default.
        """
        seen = job_execution_duration(obj.get("status"), new, now or datetime.now(UTC))
        if seen is not None:
            status, retries, seconds = seen
            labels = (*_identity(obj), ("job_deployment_status", status))
            labels += (("retry_count", str(retries)),)
            self._durations[(_JOB_DURATION, labels)] = (seconds, _version(obj))

    def cluster_status_written(
        self, obj: Mapping[str, Any], new: Mapping[str, Any], now: datetime | None = None
    ) -> None:
        """Record what a successful RayCluster status write observes.

        Args:
            obj: The RayCluster as read before the write (metadata and old status).
            new: The status written (JSON form).
            now: The time of the write; the clock by default.
        """
        created = (obj.get("metadata") or {}).get("creationTimestamp")
        seconds = cluster_provisioned_duration(
            obj.get("status"), new, created, now or datetime.now(UTC)
        )
        if seconds is not None:
            key = (_CLUSTER_DURATION, _identity(obj))
            self._durations[key] = (seconds, _version(obj))

    def duration_samples(self) -> list[Sample]:
        """The duration gauges recorded so far."""
        return [
            Sample(name, labels, value) for (name, labels), (value, _) in self._durations.items()
        ]

    def collect(self, clusters: Informer | None = None, rayjobs: Informer | None = None) -> str:
        """The duration series in the text format, less those of CRs the worker saw go.

        KubeRay drops a CR's series once it finds the CR gone; here the worker's copies tell,
        so a scrape sends no request to the API server. A copy that cannot tell yet (behind
        the version the series was recorded at, or not whole while its stream is broken)
        keeps the series until it can.

        Args:
            clusters: The worker's copy of the RayClusters; None keeps every cluster series.
            rayjobs: Its copy of the RayJobs; None keeps every job series.

        Returns:
            The exposition text.
        """
        copies = {_CLUSTER_DURATION: clusters, _JOB_DURATION: rayjobs}
        for key, (_, as_of) in list(self._durations.items()):
            copy, ident = copies[key[0]], dict(key[1])
            if copy is not None and copy.gone(
                ident["namespace"], ident["name"], ident["uid"], as_of
            ):
                del self._durations[key]
        return render(self.duration_samples())
