"""The PodGroups of the gang schedulers: what a whole Ray cluster needs before any pod runs.

KubeRay's operator makes one where its `batch-scheduler` option asks for it, before the pods
(`DoBatchSchedulingOnSubmission` of `batchscheduler/`):

* Volcano: `ray-<name>-pg` for a RayCluster, and for a RayJob, whose cluster and submitter
  share it (the RayJob's cluster then gets none of its own). Its minimum members are the head
  and the desired workers (the minimum ones with autoscaling), the submitter left out so the
  gang never waits on a pod that waits on the cluster; its minimum resources are theirs, the
  submitter's included. Queue, priority class and network topology come from the CR's labels,
  the annotations from the CR (less kubectl's last-applied copy, which KubeRay v1.7 copies
  too). Kept in step with the spec: members and resources follow it.
* scheduler-plugins: a RayCluster with `ray.io/gang-scheduling-enabled` gets one named after
  it, with the desired members and resources, made once.

Pure: a CR in, a manifest out; `needs_update` compares a stored one with the wanted one.
"""

from __future__ import annotations

from activities.builders import batch_scheduling as bs
from activities.builders import names
from activities.builders.autoscaler import is_autoscaling_enabled
from activities.builders.desired import cluster_resources, pod_resources, sum_resources
from activities.builders.rayjob import submitter_pod_spec
from crds import constants as k
from crds import replicas
from crds.common import JSONObject
from crds.enums import JobSubmissionMode
from crds.quantities import Quantity, try_parse_quantity
from crds.raycluster import RayCluster, RayClusterSpec
from crds.rayjob import RayJob

VOLCANO_API_VERSION = "scheduling.volcano.sh/v1beta1"
PLUGINS_API_VERSION = "scheduling.x-k8s.io/v1alpha1"


def cluster_pod_group(scheduler: str, cluster: RayCluster) -> JSONObject | None:
    """The PodGroup the scheduler needs for this RayCluster, or None.

    `batch_scheduling.label_problem` says whether Volcano's can be made.
    """
    if scheduler == bs.VOLCANO:
        if cluster.labels.get(k.LABEL_ORIGINATED_FROM_CRD) == names.CREATOR_RAYJOB:
            return None  # the RayJob's PodGroup gangs it
        members, resources = _volcano_gang(cluster.spec)
        owner = names.owner_reference(cluster)
        return _volcano(
            cluster.name,
            cluster.namespace,
            cluster.labels,
            cluster.annotations,
            owner,
            members,
            resources,
        )
    if scheduler == bs.SCHEDULER_PLUGINS and bs.GANG_SCHEDULING_LABEL in cluster.labels:
        members = replicas.desired_worker_pods(cluster.spec) + 1
        # KubeRay names the owner without making it the controller.
        owner = {
            "apiVersion": k.API_VERSION,
            "kind": "RayCluster",
            "name": cluster.name,
            "uid": cluster.metadata.uid or "",
        }
        return {
            "apiVersion": PLUGINS_API_VERSION,
            "kind": "PodGroup",
            "metadata": {
                "name": cluster.name,
                "namespace": cluster.namespace,
                "ownerReferences": [owner],
            },
            "spec": {
                "minMember": members,
                "minResources": _written(cluster_resources(cluster.spec)),
            },
        }
    return None


def rayjob_pod_group(scheduler: str, rayjob: RayJob) -> JSONObject | None:
    """The Volcano PodGroup of a RayJob that creates its cluster, or None.

    `batch_scheduling.label_problem` says whether it can be made.
    """
    spec = rayjob.spec.ray_cluster_spec
    if scheduler != bs.VOLCANO or spec is None:
        return None
    members, resources = _volcano_gang(spec)
    mode = rayjob.spec.submission_mode or JobSubmissionMode.K8S_JOB
    if mode in (JobSubmissionMode.K8S_JOB, JobSubmissionMode.SIDECAR):
        # Reserved though not a member: the submitter starts only once the cluster is up.
        resources = sum_resources(resources, pod_resources(submitter_pod_spec(rayjob)))
    owner = names.controller_reference("RayJob", rayjob.name, rayjob.metadata.uid)
    return _volcano(
        rayjob.name, rayjob.namespace, rayjob.labels, rayjob.annotations, owner, members, resources
    )


def released(cluster: RayCluster | None) -> JSONObject:
    """What a finished RayJob's Volcano PodGroup keeps reserved (the parts `updated` takes).

    Its live cluster's members and resources (suspended groups left out), nothing once the
    cluster is gone or going (KubeRay v1.7 `CleanupOnCompletion`).
    """
    if cluster is None or cluster.metadata.deletion_timestamp:
        return {"spec": {"minMember": 0, "minResources": {}}}
    members, resources = _volcano_gang(cluster.spec)
    return {"spec": {"minMember": members, "minResources": _written(resources)}}


def needs_update(existing: JSONObject, desired: JSONObject) -> bool:
    """Whether a Volcano PodGroup's members or resources are not the wanted ones.

    KubeRay compares the quantities, not their spelling, and leaves everything else alone.
    """
    have, want = existing.get("spec") or {}, desired.get("spec") or {}
    if have.get("minMember") != want.get("minMember") or have.get("minResources") is None:
        return True
    return _amounts(have["minResources"]) != _amounts(want["minResources"])


def updated(existing: JSONObject, desired: JSONObject) -> JSONObject:
    """The stored PodGroup with the wanted members and resources, nothing else changed."""
    spec = dict(existing.get("spec") or {})
    spec["minMember"] = desired["spec"]["minMember"]
    spec["minResources"] = desired["spec"]["minResources"]
    return {**existing, "spec": spec}


def _volcano_gang(spec: RayClusterSpec) -> tuple[int, dict[str, Quantity]]:
    """Members (the head too) and resources: the minimum ones with autoscaling, else desired."""
    if is_autoscaling_enabled(spec):
        return replicas.min_worker_pods(spec) + 1, cluster_resources(spec, minimum=True)
    return replicas.desired_worker_pods(spec) + 1, cluster_resources(spec)


def _volcano(
    name: str,
    namespace: str,
    labels: dict[str, str],
    annotations: dict[str, str],
    owner: JSONObject,
    members: int,
    resources: dict[str, Quantity],
) -> JSONObject:
    group_name = bs.volcano_group_name(name, labels)
    spec: JSONObject = {"minMember": members, "minResources": _written(resources)}
    mode = labels.get(bs.NETWORK_TOPOLOGY_MODE_LABEL)
    if mode is not None:
        topology: JSONObject = {"mode": mode}
        tier = labels.get(bs.NETWORK_TOPOLOGY_TIER_LABEL)
        if tier is not None and not bs.label_problem(labels):
            topology["highestTierAllowed"] = int(tier)
        spec["networkTopology"] = topology
    if bs.VOLCANO_QUEUE_LABEL in labels:
        spec["queue"] = labels[bs.VOLCANO_QUEUE_LABEL]
    if bs.PRIORITY_CLASS_LABEL in labels:
        spec["priorityClassName"] = labels[bs.PRIORITY_CLASS_LABEL]
    metadata: JSONObject = {"name": group_name, "namespace": namespace, "ownerReferences": [owner]}
    copied = names.without_last_applied(annotations)
    if copied:
        metadata["annotations"] = copied
    return {
        "apiVersion": VOLCANO_API_VERSION,
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }


def _written(resources: dict[str, Quantity]) -> dict[str, str]:
    return {name: str(quantity) for name, quantity in sorted(resources.items())}


def _amounts(resources: object) -> dict[str, object]:
    if not isinstance(resources, dict):
        return {}
    found: dict[str, object] = {}
    for name, value in resources.items():
        quantity = try_parse_quantity(value)
        found[name] = quantity.amount if quantity is not None else value
    return found
