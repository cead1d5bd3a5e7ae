"""KubeRay's state gauges (`kuberay_*_info`, `*_deployment_status`, `*_condition_*`), from memory.

The bridge serves them (see `activities.kuberay_metrics` for why the bridge). Its watchers see
every event of every watched CR, status writes included, so `StateGauges` keeps, per CR uid,
the few facts the samples need, updated by each event and dropped by a deletion or by a
re-list that no longer holds the CR (the bridge turns that into a deletion). A scrape renders
from memory: it makes no API request, however many scrapes come, and costs one rendering.

What is kept of a CR is a slotted record of its name, uid, namespace (shared by every CR of
the namespace) and one or two state values (constants): about 250 bytes per CR with a name of
16 characters, dictionary entry included (`tests/bridge/test_state_gauges.py` measures it),
where a list per scrape parsed every whole object again.

As with KubeRay, whose collectors read their informers' caches, a series exists while the CR
does: one that is deleted loses its series at its DELETED event; a changed state replaces the
series, leaving no stale one behind. Namespaces the bridge leaves alone
(`KUBERAY_TEMPORAL_IGNORE_NAMESPACES`) are left to the operator that reconciles them, which
serves their series.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from activities.kube.client import JSON
from activities.kube.vocabulary import WatchEventType
from activities.kuberay_metrics import Labels, Sample, condition_true, render
from bridge.targets import RAYCLUSTER, RAYJOB, RAYSERVICE, Target
from crds.constants import KINDS, LABEL_ORIGINATED_FROM_CRD
from crds.enums import JobDeploymentStatus, RayClusterConditionType, RayServiceConditionType

_NO_OWNER = "None"
"""`owner_kind` of a RayCluster no RayJob or RayService made, as KubeRay writes it."""

# Label values met again and again are kept once: the known ones as their constants.
_OWNERS = {kind: kind for kind in (*KINDS, _NO_OWNER)}
_DEPLOYMENT_STATUSES = {status.value: status.value for status in JobDeploymentStatus}


@dataclass(frozen=True, slots=True)
class CrIdentity:
    """The labels every series of a CR starts with."""

    name: str
    namespace: str
    uid: str

    def labels(self) -> Labels:
        """`name`, `namespace` and `uid`, in KubeRay's order."""
        return (("name", self.name), ("namespace", self.namespace), ("uid", self.uid))


@dataclass(frozen=True, slots=True)
class ClusterState(CrIdentity):
    """What `kuberay_cluster_info` and `kuberay_cluster_condition_provisioned` say."""

    owner_kind: str
    provisioned: bool

    def samples(self) -> list[Sample]:
        """The RayCluster's two series."""
        ident, provisioned = self.labels(), ("condition", _lower(self.provisioned))
        return [
            Sample("kuberay_cluster_info", (*ident, ("owner_kind", self.owner_kind)), 1),
            Sample("kuberay_cluster_condition_provisioned", (*ident, provisioned), 1),
        ]


@dataclass(frozen=True, slots=True)
class JobState(CrIdentity):
    """What `kuberay_job_info` and `kuberay_job_deployment_status` say."""

    deployment_status: str

    def samples(self) -> list[Sample]:
        """The RayJob's two series."""
        ident, status = self.labels(), ("deployment_status", self.deployment_status)
        return [
            Sample("kuberay_job_info", ident, 1),
            Sample("kuberay_job_deployment_status", (*ident, status), 1),
        ]


@dataclass(frozen=True, slots=True)
class ServiceState(CrIdentity):
    """What `kuberay_service_info` and the two RayService condition gauges say."""

    ready: bool
    upgrading: bool

    def samples(self) -> list[Sample]:
        """The RayService's three series."""
        ident = self.labels()
        ready, upgrading = ("condition", _lower(self.ready)), ("condition", _lower(self.upgrading))
        return [
            Sample("kuberay_service_info", ident, 1),
            Sample("kuberay_service_condition_ready", (*ident, ready), 1),
            Sample("kuberay_service_condition_upgrade_in_progress", (*ident, upgrading), 1),
        ]


CrState = ClusterState | JobState | ServiceState


def cluster_state(cluster: Mapping[str, Any]) -> ClusterState:
    """The facts of one RayCluster its gauges need."""
    labels = _mapping(_mapping(cluster.get("metadata")).get("labels"))
    owner = str(labels.get(LABEL_ORIGINATED_FROM_CRD) or _NO_OWNER)
    provisioned = condition_true(cluster.get("status"), RayClusterConditionType.PROVISIONED)
    return ClusterState(*_identity(cluster), _OWNERS.get(owner, owner), provisioned)


def job_state(job: Mapping[str, Any]) -> JobState:
    """The facts of one RayJob its gauges need."""
    status = str(_mapping(job.get("status")).get("jobDeploymentStatus") or "")
    return JobState(*_identity(job), _DEPLOYMENT_STATUSES.get(status, status))


def service_state(service: Mapping[str, Any]) -> ServiceState:
    """The facts of one RayService its gauges need."""
    status = service.get("status")
    ready = condition_true(status, RayServiceConditionType.READY)
    upgrading = condition_true(status, RayServiceConditionType.UPGRADE_IN_PROGRESS)
    return ServiceState(*_identity(service), ready, upgrading)


_STATE_OF: dict[Target, Callable[[Mapping[str, Any]], CrState]] = {
    RAYCLUSTER: cluster_state,
    RAYJOB: job_state,
    RAYSERVICE: service_state,
}
"""The kinds KubeRay has state gauges for; RayCronJob has none, nor do owned objects."""


class StateGauges:
    """The state gauges' facts of every CR the bridge watches, by uid, and their rendering."""

    def __init__(self) -> None:
        self._states: dict[str, CrState] = {}

    def observe(self, target: Target, event: str, obj: JSON) -> None:
        """Follow one watch event (a listed object comes as MODIFIED, a vanished one as DELETED).

        Args:
            target: What the watcher that saw it watches.
            event: The watch event's type.
            obj: The object, or for DELETED at least its metadata.
        """
        state_of = _STATE_OF.get(target)
        if state_of is None:
            return
        uid = str(_mapping(obj.get("metadata")).get("uid") or "")
        if event == WatchEventType.DELETED:
            self._states.pop(uid, None)
        else:
            self._states[uid] = state_of(obj)

    def text(self) -> str:
        """Every series in the text format, rendered from memory."""
        return render(sample for state in self._states.values() for sample in state.samples())

    def __len__(self) -> int:
        return len(self._states)


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = _mapping(obj.get("metadata"))
    namespace = sys.intern(str(meta.get("namespace") or ""))
    return str(meta.get("name") or ""), namespace, str(meta.get("uid") or "")


def _mapping(value: object) -> Mapping[str, Any]:
    """`value` when it is a mapping, else an empty one: a status may hold anything."""
    return value if isinstance(value, Mapping) else {}


def _lower(value: bool) -> str:
    return "true" if value else "false"
