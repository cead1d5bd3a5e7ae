"""How large a RayClusterSpec may be: ceilings KubeRay does not have, for a worker all share.

KubeRay takes any int32 for `replicas`, `minReplicas`, `maxReplicas` and `numOfHosts`, and any
number of worker groups. Here one worker serves the workflows of every namespace, each pass
does work for every group (a NetworkPolicy, a name prefix, a line of the plan), and the read
of a cluster carries a view of each pod into its history. So a spec is held to sizes far
beyond any real cluster, and a typo (`replicas: 1000000`) gets an error that names the field
instead of a cluster that never finishes starting:

* `MAX_WORKER_PODS` worker pods per group and in the whole cluster, and as the value of
  `replicas`, `minReplicas` and `maxReplicas`: twice the 5,000 nodes Kubernetes is built to
  run in one cluster, where a Ray worker usually takes a node or a good part of one.
  `maxReplicas` may also keep its CRD default, the largest int32, which means no maximum.
* `MAX_HOSTS` pods per replica (`numOfHosts`): a replica's pods are created in one pass, as
  KubeRay creates them in one reconcile (a replica that lacks a host is rebuilt whole), so
  this bounds the largest pass. KubeRay's multi-host samples use 64.
* `MAX_WORKER_GROUPS` worker groups: a group is a kind of node (a machine type, an
  accelerator, a zone), of which clusters have a handful.
"""

from __future__ import annotations

from crds import replicas
from crds.raycluster import RayClusterSpec, WorkerGroupSpec
from crds.validation.scope import ClusterScope
from crds.violations import Violation

MAX_WORKER_PODS = 10_000
MAX_HOSTS = 1_000
MAX_WORKER_GROUPS = 100


def group_count(scope: ClusterScope) -> list[Violation]:
    """At most `MAX_WORKER_GROUPS` worker groups."""
    count = len(scope.spec.worker_group_specs or [])
    if count <= MAX_WORKER_GROUPS:
        return []
    message = f"{count} worker groups; at most {MAX_WORKER_GROUPS} are accepted"
    return [Violation(scope.at("workerGroupSpecs"), message)]


def group_sizes(scope: ClusterScope) -> list[Violation]:
    """Per group: each count field, then the pods it asks for, within the ceilings."""
    found: list[Violation] = []
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        fields = _field_violations(scope, index, group)
        found += fields or _pod_violations(scope, index, group)
    return found


def cluster_size(scope: ClusterScope) -> list[Violation]:
    """At most `MAX_WORKER_PODS` worker pods in all groups together.

    Only when every group is within its own ceilings: a group that is not has its own error.
    """
    if group_sizes(scope):
        return []
    total = sum(_requested_pods(g) for g in scope.spec.worker_group_specs or [])
    if total <= MAX_WORKER_PODS:
        return []
    message = (
        f"the worker groups ask for {total} pods together; at most {MAX_WORKER_PODS} "
        "worker pods per cluster are accepted"
    )
    return [Violation(scope.at("workerGroupSpecs"), message)]


RULES = (group_count, group_sizes, cluster_size)


def oversized(spec: RayClusterSpec) -> bool:
    """Whether the spec breaks a ceiling: validation refuses it, so nothing is built for it."""
    scope = ClusterScope(spec, "spec")
    return any(rule(scope) for rule in RULES)


def _field_violations(scope: ClusterScope, index: int, group: WorkerGroupSpec) -> list[Violation]:
    checked = [
        ("replicas", group.replicas, MAX_WORKER_PODS),
        ("minReplicas", group.min_replicas, MAX_WORKER_PODS),
        ("numOfHosts", group.num_of_hosts, MAX_HOSTS),
    ]
    if group.max_replicas != replicas.MAX_REPLICAS_DEFAULT:  # the default: no maximum
        checked.append(("maxReplicas", group.max_replicas, MAX_WORKER_PODS))
    found: list[Violation] = []
    for field_name, value, ceiling in checked:
        if value is not None and value > ceiling:
            message = (
                f"{field_name} of worker group {group.group_name!r} is {value}; "
                f"at most {ceiling} is accepted"
            )
            found.append(Violation(scope.at("workerGroupSpecs", index, field_name), message))
    return found


def _pod_violations(scope: ClusterScope, index: int, group: WorkerGroupSpec) -> list[Violation]:
    pods = _requested_pods(group)
    if pods <= MAX_WORKER_PODS:
        return []
    message = (
        f"worker group {group.group_name!r} asks for {pods} pods "
        f"({replicas.requested_replicas(group)} replicas of {replicas.hosts(group)} hosts); "
        f"at most {MAX_WORKER_PODS} per group are accepted"
    )
    return [Violation(scope.at("workerGroupSpecs", index, "replicas"), message)]


def _requested_pods(group: WorkerGroupSpec) -> int:
    """Pods the group asks for, suspended or not: a resume must not make it too large."""
    return replicas.requested_replicas(group) * replicas.hosts(group)
