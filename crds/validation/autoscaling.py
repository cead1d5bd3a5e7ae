"""Rules for the in-tree autoscaler and the worker-group fields only it reads.

The autoscaler sidecar owns `replicas` and `workersToDelete` once it is on, and autoscaler v2
restarts nodes by deleting pods, so it needs `restartPolicy: Never`. Some worker-group fields
(`idleTimeoutSeconds`, `priority`) are read only by autoscaler v2, and a suspended worker group
would fight with an autoscaler that scales it back up; KubeRay rejects those combinations.
"""

from __future__ import annotations

from crds.constants import ENV_RAY_ENABLE_AUTOSCALER_V2
from crds.messages import quoted
from crds.raycluster import WorkerGroupSpec
from crds.validation import templates, versions
from crds.validation.scope import (
    ClusterScope,
    head_env_enables_autoscaler_v2,
    is_autoscaler_v2,
    is_autoscaling,
    uses_autoscaler_v2,
)
from crds.violations import Violation, join_path

_ENV_GENERATED_START_CMD = "KUBERAY_GEN_AUTOSCALER_START_CMD"
_PRIORITY_MIN_RAY = (2, 56, 0)
_RESTART_NEVER = "Never"


def suspended_groups_without_autoscaler(scope: ClusterScope) -> list[Violation]:
    """A worker group cannot be suspended while the autoscaler manages it."""
    if not is_autoscaling(scope.spec):
        return []
    found: list[Violation] = []
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        if group.suspend is True:
            message = (
                f"worker group {quoted(group.group_name)} cannot be suspended while "
                "enableInTreeAutoscaling is on: the autoscaler would scale it back up"
            )
            found.append(Violation(scope.at("workerGroupSpecs", index, "suspend"), message))
    return found


def autoscaler_v2_env(scope: ClusterScope) -> list[Violation]:
    """The legacy RAY_enable_autoscaler_v2 head env var, checked against the other settings."""
    head = templates.ray_container(scope.spec.head_group_spec.template)
    if head is None:
        return []
    found_env = templates.find_env(templates.env_vars(head), ENV_RAY_ENABLE_AUTOSCALER_V2)
    if found_env is None:
        return []
    index = found_env[0]
    path = templates.ray_container_path(scope.head_template_path, "env", index)
    enabled = head_env_enables_autoscaler_v2(scope.spec)
    if not is_autoscaling(scope.spec) and enabled is not None:
        message = (
            f"{ENV_RAY_ENABLE_AUTOSCALER_V2}={enabled[1]} needs the autoscaler: "
            "set enableInTreeAutoscaling: true (and autoscalerOptions.version: v2)"
        )
        return [Violation(path, message)]
    options = scope.spec.autoscaler_options
    if is_autoscaling(scope.spec) and options is not None and options.version is not None:
        message = (
            f"{ENV_RAY_ENABLE_AUTOSCALER_V2} and autoscalerOptions.version are both set; "
            "remove the env var and keep autoscalerOptions.version"
        )
        return [Violation(path, message)]
    return []


def v2_restart_policies(scope: ClusterScope) -> list[Violation]:
    """Autoscaler v2 replaces nodes itself, so pods must not be restarted in place."""
    if not is_autoscaling(scope.spec) or not is_autoscaler_v2(scope.spec):
        return []
    targets = [(scope.head_template_path, "the head pod", scope.spec.head_group_spec.template)]
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        described = f"worker group {quoted(group.group_name)}"
        targets.append((scope.worker_template_path(index), described, group.template))
    found: list[Violation] = []
    for template_path, described, template in targets:
        policy = templates.restart_policy(template)
        if policy and policy != _RESTART_NEVER:
            message = (
                f"restartPolicy of {described} must be Never or unset with autoscaler v2 "
                f"(got {quoted(policy)})"
            )
            found.append(Violation(join_path(template_path, "spec", "restartPolicy"), message))
    return found


def group_idle_timeouts(scope: ClusterScope) -> list[Violation]:
    """Per-group `idleTimeoutSeconds`: not negative, and only read by autoscaler v2."""
    found: list[Violation] = []
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        value = group.idle_timeout_seconds
        if value is None:
            continue
        path = scope.at("workerGroupSpecs", index, "idleTimeoutSeconds")
        if value < 0:
            message = f"idleTimeoutSeconds must not be negative (got {value})"
            found.append(Violation(path, message))
        elif not uses_autoscaler_v2(scope.spec):
            message = (
                f"idleTimeoutSeconds of worker group {quoted(group.group_name)} is only used by "
                "autoscaler v2; set autoscalerOptions.version: v2"
            )
            found.append(Violation(path, message))
    return found


def group_priorities(scope: ClusterScope) -> list[Violation]:
    """Per-group `priority`: needs Ray 2.56 or later and autoscaler v2."""
    found: list[Violation] = []
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        if group.priority:
            found += _group_priority(scope, index, group)
    return found


def _group_priority(scope: ClusterScope, index: int, group: WorkerGroupSpec) -> list[Violation]:
    feature = f"priority on worker group {quoted(group.group_name)}"
    problem = versions.minimum_problem(scope.spec.ray_version, _PRIORITY_MIN_RAY, feature)
    if problem is not None:
        return [Violation(scope.at("rayVersion"), problem)]
    if uses_autoscaler_v2(scope.spec):
        return []
    message = (
        f"priority ({group.priority}) of worker group {quoted(group.group_name)} is only used by "
        "autoscaler v2; set autoscalerOptions.version: v2"
    )
    return [Violation(scope.at("workerGroupSpecs", index, "priority"), message)]


def autoscaler_options(scope: ClusterScope) -> list[Violation]:
    """`autoscalerOptions`: no negative idle timeout, no override of KubeRay's start command."""
    options = scope.spec.autoscaler_options
    if options is None:
        return []
    found: list[Violation] = []
    timeout = options.idle_timeout_seconds
    if timeout is not None and timeout < 0:
        message = f"idleTimeoutSeconds must not be negative (got {timeout})"
        found.append(Violation(scope.at("autoscalerOptions", "idleTimeoutSeconds"), message))
    for index, _ in templates.env_entries(options.env or [], (_ENV_GENERATED_START_CMD,)):
        message = (
            f"{_ENV_GENERATED_START_CMD} is set by KubeRay in the autoscaler container; "
            "do not set it yourself"
        )
        found.append(Violation(scope.at("autoscalerOptions", "env", index), message))
    return found


RULES = (
    group_idle_timeouts,
    group_priorities,
    suspended_groups_without_autoscaler,
    autoscaler_v2_env,
    v2_restart_policies,
    autoscaler_options,
)
