"""What a batch scheduler needs on the pods KubeRay creates: its name, queue and gang metadata.

KubeRay's operator takes one scheduler for all its CRs (its `batch-scheduler` option; here the
worker setting `KUBERAY_TEMPORAL_BATCH_SCHEDULER`), and on every pod it creates (the head, the
workers, a RayJob's submitter) and on the RayCluster a K8sJobMode RayJob creates, stamps what
that scheduler reads (`AddMetadataToChildResource` of `batchscheduler/`):

* KAI (`kai-scheduler`): `schedulerName`, and the parent's `kai.scheduler/queue` label. KAI
  groups the pods itself; it cannot gang a K8sJobMode RayJob, whose submitter comes after the
  cluster, so such a RayJob is refused.
* YuniKorn (`yunikorn`): `schedulerName`, the application id and queue under YuniKorn's pod
  label names, and with `ray.io/gang-scheduling-enabled` on the parent the task groups (one per
  Ray group, with its minimum members and resources) and each pod's task group name.
* Volcano (`volcano`): `schedulerName`, the parent's queue and priority class labels, and the
  annotations naming its PodGroup and the pod's Ray group (the PodGroup: `pod_groups`).
* scheduler-plugins (`scheduler-plugins`): the scheduler's instance name
  (`scheduler-plugins-scheduler`), and with `ray.io/gang-scheduling-enabled` on the parent the
  label naming its PodGroup, which is named after the parent. KubeRay takes no RayJob with it
  (only a RayCluster's PodGroup is made), so neither does this.

Pure: the parent's labels, annotations and spec in, the child edited in place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from activities.builders.desired import pod_resources
from activities.builders.names import CREATOR_RAYJOB
from crds.common import JSONObject
from crds.constants import LABEL_ORIGINATED_FROM_CR_NAME, LABEL_ORIGINATED_FROM_CRD
from crds.enums import JobSubmissionMode
from crds.raycluster import RayClusterSpec
from crds.rayjob import RayJobSpec

KAI = "kai-scheduler"
YUNIKORN = "yunikorn"
VOLCANO = "volcano"
SCHEDULER_PLUGINS = "scheduler-plugins"
SCHEDULER_PLUGINS_INSTANCE = "scheduler-plugins-scheduler"
"""The `schedulerName` of scheduler-plugins' pods: the name its chart installs it under."""

KAI_QUEUE_LABEL = "kai.scheduler/queue"
YUNIKORN_APP_ID_LABEL = "yunikorn.apache.org/app-id"
YUNIKORN_QUEUE_LABEL = "yunikorn.apache.org/queue"
YUNIKORN_POD_APP_ID_LABEL = "applicationId"
YUNIKORN_POD_QUEUE_LABEL = "queue"
YUNIKORN_TASK_GROUPS = "yunikorn.apache.org/task-groups"
YUNIKORN_TASK_GROUP_NAME = "yunikorn.apache.org/task-group-name"
GANG_SCHEDULING_LABEL = "ray.io/gang-scheduling-enabled"
VOLCANO_QUEUE_LABEL = "volcano.sh/queue-name"
PRIORITY_CLASS_LABEL = "ray.io/priority-class-name"
VOLCANO_GROUP_NAME = "scheduling.k8s.io/group-name"
VOLCANO_TASK_SPEC = "volcano.sh/task-spec"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
NETWORK_TOPOLOGY_MODE_LABEL = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_TIER_LABEL = "volcano.sh/network-topology-highest-tier-allowed"
HEAD_GROUP = "headgroup"
SUBMITTER_GROUP = "submittergroup"


class UnschedulableError(ValueError):
    """The scheduler cannot take this CR as it is (the message says why)."""


@dataclass(frozen=True)
class Parent:
    """The CR whose child is stamped: a RayCluster (`cluster`) or a RayJob (`job`)."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    name: str
    cluster: RayClusterSpec | None = None
    job: RayJobSpec | None = None
    submitter_pod: JSONObject | None = None
    """A RayJob's submitter pod template spec, for its YuniKorn task group."""


def check_submission(scheduler: str, job: RayJobSpec, labels: Mapping[str, str]) -> None:
    """Refuse a RayJob the scheduler cannot gang (KubeRay: `DoBatchSchedulingOnSubmission`).

    Raises:
        UnschedulableError: KAI with K8sJobMode; scheduler-plugins with any RayJob; Volcano
            with a network topology label it cannot read.
    """
    problem = label_problem(labels) if scheduler == VOLCANO else ""
    if problem:
        raise UnschedulableError(f"the volcano batch scheduler cannot make its PodGroup: {problem}")
    if scheduler == SCHEDULER_PLUGINS:
        raise UnschedulableError(
            "the scheduler-plugins batch scheduler takes RayClusters only, as in KubeRay; "
            "create the RayCluster and submit to it (clusterSelector), or use another scheduler"
        )
    mode = job.submission_mode or JobSubmissionMode.K8S_JOB
    if scheduler == KAI and mode == JobSubmissionMode.K8S_JOB:
        raise UnschedulableError(
            "the kai-scheduler batch scheduler cannot gang-schedule a K8sJobMode RayJob: its "
            "submitter pod is created only once the RayCluster is ready; use HTTPMode or "
            "SidecarMode"
        )


def label_problem(labels: Mapping[str, str]) -> str:
    """Why a Volcano PodGroup cannot be made from these labels, or "".

    KubeRay cannot make it either (Go's `Atoi` refuses the tier) and retries.
    """
    tier = labels.get(NETWORK_TOPOLOGY_TIER_LABEL)
    if tier is None or labels.get(NETWORK_TOPOLOGY_MODE_LABEL) is None:
        return ""
    if re.fullmatch(r"[+-]?[0-9]{1,18}", tier) is None:
        return f"the label {NETWORK_TOPOLOGY_TIER_LABEL}={tier!r} is not a whole number"
    return ""


def stamp(scheduler: str, parent: Parent, child: JSONObject, group: str = "") -> None:
    """Add what `scheduler` reads to `child`: a pod, a pod template or a RayCluster manifest.

    `group` is the pod's Ray group (`headgroup`, a worker group's name, `submittergroup`);
    empty for a RayCluster, which holds several.
    """
    meta = child.setdefault("metadata", {})
    labels: dict[str, str] = dict(meta.get("labels") or {})
    annotations: dict[str, str] = dict(meta.get("annotations") or {})
    if scheduler == KAI:
        _copy_label(parent, labels, KAI_QUEUE_LABEL, KAI_QUEUE_LABEL)
    elif scheduler == YUNIKORN:
        _copy_label(parent, labels, YUNIKORN_APP_ID_LABEL, YUNIKORN_POD_APP_ID_LABEL)
        _copy_label(parent, labels, YUNIKORN_QUEUE_LABEL, YUNIKORN_POD_QUEUE_LABEL)
        if GANG_SCHEDULING_LABEL in parent.labels:
            annotations[YUNIKORN_TASK_GROUPS] = parent.annotations.get(
                YUNIKORN_TASK_GROUPS
            ) or task_groups(parent)
            if group:
                annotations[YUNIKORN_TASK_GROUP_NAME] = group
    elif scheduler == VOLCANO:
        _copy_label(parent, labels, VOLCANO_QUEUE_LABEL, VOLCANO_QUEUE_LABEL)
        _copy_label(parent, labels, PRIORITY_CLASS_LABEL, PRIORITY_CLASS_LABEL)
        # A RayJob on an existing cluster has no PodGroup: Volcano groups its submitter alone.
        if parent.job is None or parent.job.ray_cluster_spec is not None:
            annotations[VOLCANO_GROUP_NAME] = volcano_group_name(parent.name, parent.labels)
            annotations[VOLCANO_TASK_SPEC] = group
    elif scheduler == SCHEDULER_PLUGINS:
        if GANG_SCHEDULING_LABEL in parent.labels:
            labels[POD_GROUP_LABEL] = parent.name
    else:
        return
    meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    if child.get("kind") != "RayCluster":  # a pod or a pod template: the scheduler's name
        child.setdefault("spec", {})["schedulerName"] = scheduler_name(scheduler)


def scheduler_name(scheduler: str) -> str:
    """The `schedulerName` of the pods a scheduler takes."""
    return SCHEDULER_PLUGINS_INSTANCE if scheduler == SCHEDULER_PLUGINS else scheduler


def volcano_group_name(name: str, labels: Mapping[str, str]) -> str:
    """Volcano's PodGroup name: `ray-<name>-pg`, the RayJob's name for what a RayJob made.

    One PodGroup gangs a RayJob's cluster and its submitter.
    """
    if labels.get(LABEL_ORIGINATED_FROM_CRD) == CREATOR_RAYJOB:
        name = labels.get(LABEL_ORIGINATED_FROM_CR_NAME) or name
    return f"ray-{name}-pg"


def task_groups(parent: Parent) -> str:
    """YuniKorn's task groups of the parent, as the JSON of its annotation.

    One per Ray group: the head (1 member), each worker group (minReplicas × numOfHosts), and a
    RayJob's submitter (1); each with one pod's resources and its placement constraints.
    """
    spec = parent.cluster if parent.job is None else parent.job.ray_cluster_spec
    groups: list[dict[str, Any]] = []
    if spec is not None:
        head = spec.head_group_spec.template.get("spec") or {}
        groups.append(_task_group(HEAD_GROUP, 1, head))
        for worker in spec.worker_group_specs or []:
            pod = worker.template.get("spec") or {}
            members = (worker.min_replicas or 0) * (worker.num_of_hosts or 1)
            groups.append(_task_group(worker.group_name, members, pod))
    if parent.job is not None and parent.submitter_pod is not None:
        groups.append(_task_group(SUBMITTER_GROUP, 1, parent.submitter_pod))
    return json.dumps(groups, separators=(",", ":"))


def _task_group(name: str, members: int, pod: JSONObject) -> dict[str, Any]:
    """One task group, its keys in the order KubeRay's Go struct writes them."""
    group: dict[str, Any] = {
        "minResource": {k: str(v) for k, v in sorted(pod_resources(pod).items())}
    }
    if pod.get("nodeSelector"):
        group["nodeSelector"] = dict(sorted(pod["nodeSelector"].items()))
    if pod.get("affinity"):
        group["affinity"] = pod["affinity"]
    group["name"] = name
    if pod.get("tolerations"):
        group["tolerations"] = pod["tolerations"]
    group["minMember"] = members
    return group


def _copy_label(parent: Parent, labels: dict[str, str], source: str, target: str) -> None:
    value = parent.labels.get(source)
    if value:
        labels[target] = value
