"""RayJob clean-up rules: `shutdownAfterJobFinishes`, the legacy policies and `deletionRules`.

A RayJob can say what to delete after it finishes in three ways that KubeRay keeps apart:
shutdownAfterJobFinishes (+ TTL), the deprecated onSuccess/onFailure pair, and deletionRules.
Rules escalate from workers to the cluster to the RayJob itself, so for one condition their
TTLs must not go down along that order, and each (condition, policy) pair may appear once.
A RayJob that runs on an existing cluster (clusterSelector) must not delete that cluster.
"""

from __future__ import annotations

from crds.enums import DeletionPolicyType, JobDeploymentStatus, JobStatus
from crds.rayjob import DeletionPolicy, DeletionRule, DeletionStrategy, RayJobSpec
from crds.validation.scope import is_autoscaling
from crds.violations import Violation, join_path

_BASE = "spec.deletionStrategy"
_RULE_JOB_STATUSES = (JobStatus.SUCCEEDED, JobStatus.FAILED)
_RULE_DEPLOYMENT_STATUSES = (JobDeploymentStatus.FAILED,)
# Deletion escalates along this order; TTLs must not decrease along it.
_ESCALATION = (
    DeletionPolicyType.DELETE_WORKERS,
    DeletionPolicyType.DELETE_CLUSTER,
    DeletionPolicyType.DELETE_SELF,
)
_CLUSTER_POLICIES = (DeletionPolicyType.DELETE_CLUSTER, DeletionPolicyType.DELETE_WORKERS)

ConditionKey = tuple[str, str]  # ("jobStatus", "SUCCEEDED") or ("jobDeploymentStatus", "Failed")


def deletion_violations(spec: RayJobSpec) -> list[Violation]:
    """Every clean-up rule for a RayJob spec."""
    found = _ttl_needs_shutdown(spec)
    strategy = spec.deletion_strategy
    if strategy is None:
        return found
    legacy = strategy.on_success is not None or strategy.on_failure is not None
    rules = strategy.deletion_rules
    if rules is not None and legacy:
        message = (
            "onSuccess/onFailure and deletionRules cannot be used together; keep deletionRules"
        )
        return [*found, Violation(_BASE, message)]
    if rules and spec.shutdown_after_job_finishes:
        message = (
            "shutdownAfterJobFinishes cannot be combined with deletionRules; "
            "use a DeleteCluster rule instead"
        )
        return [*found, Violation("spec.shutdownAfterJobFinishes", message)]
    if legacy:
        return found + _legacy_violations(spec, strategy)
    if rules:
        return found + rule_violations(spec, rules)
    if rules is not None:
        message = "deletionRules must contain at least one rule"
        return [*found, Violation(f"{_BASE}.deletionRules", message)]
    message = "deletionStrategy needs either both onSuccess and onFailure, or deletionRules"
    return [*found, Violation(_BASE, message)]


def _ttl_needs_shutdown(spec: RayJobSpec) -> list[Violation]:
    ttl = spec.ttl_seconds_after_finished or 0
    if spec.shutdown_after_job_finishes or ttl <= 0:
        return []
    message = f"ttlSecondsAfterFinished ({ttl}) only applies with shutdownAfterJobFinishes: true"
    return [Violation("spec.ttlSecondsAfterFinished", message)]


def _legacy_violations(spec: RayJobSpec, strategy: DeletionStrategy) -> list[Violation]:
    sides = {"onSuccess": strategy.on_success, "onFailure": strategy.on_failure}
    missing = [
        _legacy_missing(side, value)
        for side, value in sides.items()
        if value is None or value.policy is None
    ]
    if missing:
        return missing
    found: list[Violation] = []
    for side, value in sides.items():
        found += _legacy_policy(spec, side, value)
    return found


def _legacy_missing(side: str, value: DeletionPolicy | None) -> Violation:
    if value is None:
        message = f"{side} must be set: the legacy policies need both onSuccess and onFailure"
        return Violation(join_path(_BASE, side), message)
    return Violation(join_path(_BASE, side, "policy"), f"{side}.policy must be set")


def _legacy_policy(spec: RayJobSpec, side: str, value: DeletionPolicy | None) -> list[Violation]:
    policy = value.policy if value is not None else None
    path = join_path(_BASE, side, "policy")
    if policy in _CLUSTER_POLICIES and spec.cluster_selector:
        return [Violation(path, _selector_message(policy))]
    if policy == DeletionPolicyType.DELETE_WORKERS and is_autoscaling(spec.ray_cluster_spec):
        return [Violation(path, _autoscaling_message())]
    if policy == DeletionPolicyType.DELETE_NONE and spec.shutdown_after_job_finishes:
        message = "DeleteNone contradicts shutdownAfterJobFinishes: true"
        return [Violation(path, message)]
    return []


def _selector_message(policy: DeletionPolicyType | None) -> str:
    return (
        f"{policy} is not allowed with clusterSelector: "
        "the RayJob runs on an existing RayCluster it does not own"
    )


def _autoscaling_message() -> str:
    return "DeleteWorkers is not supported when the cluster has enableInTreeAutoscaling on"


def rule_violations(spec: RayJobSpec, rules: list[DeletionRule]) -> list[Violation]:
    """Per-rule checks, uniqueness, then the TTL order per condition."""
    found: list[Violation] = []
    grouped: dict[ConditionKey, dict[DeletionPolicyType, tuple[int, int]]] = {}
    for index, rule in enumerate(rules):
        path = join_path(_BASE, "deletionRules", index)
        problems = _condition_violations(path, rule) or _policy_violations(path, spec, rule)
        if problems:
            found += problems
            continue
        key = _condition_key(rule)
        by_policy = grouped.setdefault(key, {})
        if rule.policy in by_policy:
            first = by_policy[rule.policy][0]
            message = (
                f"duplicates deletionRules[{first}]: same policy {rule.policy} "
                f"for {key[0]} {key[1]}"
            )
            found.append(Violation(path, message))
            continue
        by_policy[rule.policy] = (index, rule.condition.ttl_seconds or 0)
    for key, by_policy in grouped.items():
        found += _ttl_order(key, by_policy)
    return found


def _condition_violations(path: str, rule: DeletionRule) -> list[Violation]:
    condition = rule.condition
    where = join_path(path, "condition")
    job, deployment = condition.job_status, condition.job_deployment_status
    if job is not None and deployment is not None:
        return [Violation(where, "set only one of jobStatus and jobDeploymentStatus")]
    if job is None and deployment is None:
        return [Violation(where, "set one of jobStatus or jobDeploymentStatus")]
    found: list[Violation] = []
    if job is not None and job not in _RULE_JOB_STATUSES:
        message = f"jobStatus must be SUCCEEDED or FAILED (got {job.value!r})"
        found.append(Violation(join_path(where, "jobStatus"), message))
    if deployment is not None and deployment not in _RULE_DEPLOYMENT_STATUSES:
        message = f"jobDeploymentStatus must be Failed (got {deployment.value!r})"
        found.append(Violation(join_path(where, "jobDeploymentStatus"), message))
    ttl = condition.ttl_seconds
    if ttl is not None and ttl < 0:
        message = f"ttlSeconds must not be negative (got {ttl})"
        found.append(Violation(join_path(where, "ttlSeconds"), message))
    return found


def _policy_violations(path: str, spec: RayJobSpec, rule: DeletionRule) -> list[Violation]:
    where = join_path(path, "policy")
    if spec.cluster_selector and rule.policy in _CLUSTER_POLICIES:
        return [Violation(where, _selector_message(rule.policy))]
    if rule.policy == DeletionPolicyType.DELETE_WORKERS and is_autoscaling(spec.ray_cluster_spec):
        return [Violation(where, _autoscaling_message())]
    return []


def _condition_key(rule: DeletionRule) -> ConditionKey:
    if rule.condition.job_status is not None:
        return ("jobStatus", rule.condition.job_status.value)
    status = rule.condition.job_deployment_status
    return ("jobDeploymentStatus", status.value if status is not None else "")


def _ttl_order(
    key: ConditionKey, by_policy: dict[DeletionPolicyType, tuple[int, int]]
) -> list[Violation]:
    found: list[Violation] = []
    previous: tuple[DeletionPolicyType, int] | None = None
    for policy in _ESCALATION:
        if policy not in by_policy:
            continue
        index, ttl = by_policy[policy]
        if previous is not None and ttl < previous[1]:
            path = join_path(_BASE, "deletionRules", index, "condition", "ttlSeconds")
            message = (
                f"for {key[0]} {key[1]}, the {policy} TTL ({ttl}) must be at least the "
                f"{previous[0]} TTL ({previous[1]}): workers go first, then the cluster, "
                "then the RayJob"
            )
            found.append(Violation(path, message))
        previous = (policy, ttl)
    return found
