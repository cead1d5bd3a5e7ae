"""RayClusterSpec rules: pod templates, worker-group sizes, group resources and labels.

These are the checks KubeRay runs on every RayClusterSpec (`ValidateRayClusterSpec`), wherever
the spec lives: a RayCluster, a RayJob's `spec.rayClusterSpec`, or a RayService's
`spec.rayClusterConfig`. `cluster_spec_violations` is the entry point; it also runs the rules
kept in their own modules (sizes, resource quantities, container ports, autoscaling, GCS
fault tolerance, security, add-ons).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from crds.constants import LABEL_ORIGINATED_FROM_CRD
from crds.messages import quoted
from crds.raycluster import RayCluster, WorkerGroupSpec
from crds.validation import (
    addons,
    autoscaling,
    fault_tolerance,
    ports,
    resources,
    security,
    sizes,
    templates,
    versions,
)
from crds.validation.names import label_key_problems, label_value_problems
from crds.validation.references import cluster_references
from crds.validation.scope import (
    RAYCLUSTER_KIND,
    RAYJOB_KIND,
    RAYSERVICE_KIND,
    ClusterScope,
    key_path,
)
from crds.validation.service_types import head_service_violations
from crds.violations import Violation

# rayStartParams keys that size a node; the top-level `resources` field replaces them.
_START_PARAM_RESOURCES = ("num-cpus", "num-gpus", "memory", "resources")

# CRD defaults, applied by the API server before any controller reads the object.
_DEFAULT_MIN_REPLICAS = 0
_DEFAULT_MAX_REPLICAS = 2**31 - 1

ClusterRule = Callable[[ClusterScope], list[Violation]]


def cluster_spec_violations(scope: ClusterScope) -> list[Violation]:
    """Every RayClusterSpec rule, in KubeRay's order."""
    rules: list[ClusterRule] = [
        ray_version_length,
        containers_present,
        group_start_params,
        unique_group_names,
        cluster_references,
        head_service_violations,
        replica_bounds,
        *sizes.RULES,
        resources.cluster_quantities,
        ports.cluster_ports,
        *autoscaling.RULES,
        *fault_tolerance.RULES,
        *security.RULES,
        *addons.RULES,
        upgrade_strategy_owner,
    ]
    return [violation for rule in rules for violation in rule(scope)]


def ray_version_length(scope: ClusterScope) -> list[Violation]:
    """`rayVersion` is bounded (as in the CRD): it is parsed on every pass and every pod build."""
    problem = versions.length_problem(scope.spec.ray_version)
    return [] if problem is None else [Violation(scope.at("rayVersion"), problem)]


def containers_present(scope: ClusterScope) -> list[Violation]:
    """The head and every worker group need at least one container (the Ray container)."""
    found: list[Violation] = []
    if not templates.containers(scope.spec.head_group_spec.template):
        path = templates.containers_path(scope.head_template_path)
        found.append(Violation(path, "the head pod template must have at least one container"))
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        if not templates.containers(group.template):
            path = templates.containers_path(scope.worker_template_path(index))
            message = f"worker group {quoted(group.group_name)} must have at least one container"
            found.append(Violation(path, message))
    return found


def replica_bounds(scope: ClusterScope) -> list[Violation]:
    """min/maxReplicas: never negative, and min ≤ max.

    The CRD defaults a missing minReplicas to 0 and maxReplicas to 2147483647 before KubeRay
    sees the object, so both are compared with those defaults filled in (and KubeRay's
    "both must be set without the autoscaler" check can never fire on a stored object).
    """
    found: list[Violation] = []
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        found += _group_replica_bounds(scope, index, group)
    return found


def _group_replica_bounds(
    scope: ClusterScope, index: int, group: WorkerGroupSpec
) -> list[Violation]:
    found: list[Violation] = []
    name = group.group_name
    low = _DEFAULT_MIN_REPLICAS if group.min_replicas is None else group.min_replicas
    high = _DEFAULT_MAX_REPLICAS if group.max_replicas is None else group.max_replicas
    for field_name, value in (("minReplicas", low), ("maxReplicas", high)):
        if value < 0:
            path = scope.at("workerGroupSpecs", index, field_name)
            message = (
                f"{field_name} of worker group {quoted(name)} must not be negative (got {value})"
            )
            found.append(Violation(path, message))
    if low > high:
        path = scope.at("workerGroupSpecs", index, "minReplicas")
        message = (
            f"minReplicas ({low}) must not exceed maxReplicas ({high}) in group {quoted(name)}"
        )
        found.append(Violation(path, message))
    return found


def unique_group_names(scope: ClusterScope) -> list[Violation]:
    """Worker group names must be unique (KubeRay's RayCluster admission webhook)."""
    seen: dict[str, int] = {}
    found: list[Violation] = []
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        first = seen.setdefault(group.group_name, index)
        if first != index:
            path = scope.at("workerGroupSpecs", index, "groupName")
            message = (
                f"worker group name {quoted(group.group_name)} is already used by "
                f"workerGroupSpecs[{first}]; group names must be unique"
            )
            found.append(Violation(path, message))
    return found


def group_start_params(scope: ClusterScope) -> list[Violation]:
    """Per group: resources in one place only, and labels only through `labels`."""
    head = scope.spec.head_group_spec
    found = _group_params(
        scope.at("headGroupSpec"), "the head group", head.ray_start_params, head.resources
    )
    found += _group_labels(scope.at("headGroupSpec"), head.ray_start_params, head.labels)
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        base = scope.at("workerGroupSpecs", index)
        described = f"worker group {quoted(group.group_name)}"
        found += _group_params(base, described, group.ray_start_params, group.resources)
        found += _group_labels(base, group.ray_start_params, group.labels)
    return found


def _group_params(
    base: str,
    described: str,
    params: Mapping[str, str] | None,
    resources: Mapping[str, str] | None,
) -> list[Violation]:
    given = [key for key in _START_PARAM_RESOURCES if (params or {}).get(key)]
    if not given or not resources:
        return []
    message = (
        f"{described} sets resources both in rayStartParams ({', '.join(given)}) and in "
        "the top-level resources field; use only one of them"
    )
    return [Violation(f"{base}.resources", message)]


def _group_labels(
    base: str, params: Mapping[str, str] | None, labels: Mapping[str, str] | None
) -> list[Violation]:
    found: list[Violation] = []
    if params is not None and "labels" in params:
        message = "Ray node labels cannot be set in rayStartParams; use the top-level labels field"
        found.append(Violation(key_path(f"{base}.rayStartParams", "labels"), message))
    for key, value in (labels or {}).items():
        path = key_path(f"{base}.labels", key)
        for problem in label_key_problems(key):
            found.append(Violation(path, f"invalid label key {quoted(key)}: {problem}"))
        for problem in label_value_problems(value):
            found.append(Violation(path, f"invalid label value {quoted(value)}: {problem}"))
    return found


def upgrade_strategy_owner(scope: ClusterScope) -> list[Violation]:
    """`upgradeStrategy` is for RayClusters users create directly, not RayJob/RayService ones.

    KubeRay refuses to reconcile such a RayCluster, so the RayJob or RayService owning it
    would never make progress; we reject the owner's spec up front instead.
    """
    strategy = scope.spec.upgrade_strategy
    if strategy is None or strategy.type is None:
        return []
    if scope.owner_kind == RAYCLUSTER_KIND:
        return []
    message = (
        f"upgradeStrategy cannot be set on a RayCluster created by a {scope.owner_kind}; "
        f"the {scope.owner_kind} decides how its clusters are replaced"
    )
    return [Violation(scope.at("upgradeStrategy", "type"), message)]


def owner_kind_of(cluster: RayCluster) -> str:
    """Who created a RayCluster, from its `ray.io/originated-from-crd` label."""
    creator = cluster.labels.get(LABEL_ORIGINATED_FROM_CRD, "")
    return creator if creator in (RAYJOB_KIND, RAYSERVICE_KIND) else RAYCLUSTER_KIND
