"""The in-tree autoscaler: its sidecar container on the head and the RBAC it needs.

The autoscaler (shipped with Ray) reads the RayCluster and patches replicas and
workersToDelete, so the head pod gets a sidecar plus a ServiceAccount, Role and RoleBinding
named after the cluster (`pod.go` BuildAutoscalerContainer, mergeAutoscalerOverrides;
`rbac.go`); the ServiceAccount is the head's `serviceAccountName` when that is set.
"""

from __future__ import annotations

import copy

from activities.builders import names
from activities.builders.env import env_var, field_env
from crds import constants as k
from crds.common import JSONObject
from crds.enums import AutoscalerVersion
from crds.raycluster import AutoscalerOptions, RayCluster, RayClusterSpec

AUTOSCALER_START_COMMAND = (
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
    "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
)
DEFAULT_RESOURCES = {"cpu": "500m", "memory": "512Mi"}


def is_autoscaling_enabled(spec: RayClusterSpec) -> bool:
    """Whether `enableInTreeAutoscaling` is true."""
    return bool(spec.enable_in_tree_autoscaling)


def autoscaler_version(spec: RayClusterSpec) -> AutoscalerVersion | None:
    """The explicitly requested autoscaler version (None lets Ray choose)."""
    options = spec.autoscaler_options
    return options.version if options is not None else None


def shell_command(login_shell: bool) -> list[str]:
    """The shell KubeRay wraps generated commands in: `/bin/bash -c --` (`-cl` for login)."""
    return ["/bin/bash", "-cl" if login_shell else "-c", "--"]


def build_autoscaler_container(
    image: str, options: AutoscalerOptions | None = None, *, login_shell: bool = False
) -> JSONObject:
    """The `autoscaler` sidecar, with `autoscalerOptions` overrides applied."""
    container = base_autoscaler_container(image, login_shell=login_shell)
    if options is not None:
        apply_autoscaler_overrides(container, options)
    return container


def base_autoscaler_container(image: str, *, login_shell: bool = False) -> JSONObject:
    """The `autoscaler` sidecar before user overrides (same image as the Ray container)."""
    return {
        "name": k.AUTOSCALER_CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            field_env("RAY_CLUSTER_NAME", f"metadata.labels['{k.LABEL_CLUSTER}']"),
            field_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
            field_env("RAY_HEAD_POD_NAME", "metadata.name"),
            env_var("KUBERAY_CRD_VER", "v1"),
            # Users overriding args can still run the generated command through this variable.
            env_var("KUBERAY_GEN_AUTOSCALER_START_CMD", AUTOSCALER_START_COMMAND),
        ],
        "command": shell_command(login_shell),
        "args": [AUTOSCALER_START_COMMAND],
        "resources": {"limits": dict(DEFAULT_RESOURCES), "requests": dict(DEFAULT_RESOURCES)},
    }


def apply_autoscaler_overrides(container: JSONObject, options: AutoscalerOptions) -> None:
    """Apply `autoscalerOptions`: replace image, policy, resources, command; extend env, mounts."""
    if options.resources is not None:
        container["resources"] = copy.deepcopy(options.resources)
    if options.image is not None:
        container["image"] = options.image
    if options.image_pull_policy is not None:
        container["imagePullPolicy"] = options.image_pull_policy
    for field, extra in (
        ("env", options.env),
        ("envFrom", options.env_from),
        ("volumeMounts", options.volume_mounts),
    ):
        if extra:
            container[field] = [*(container.get(field) or []), *copy.deepcopy(extra)]
    if options.security_context is not None:
        container["securityContext"] = copy.deepcopy(options.security_context)
    if options.command:
        container["command"] = list(options.command)
    if options.args:
        container["args"] = list(options.args)


# --- RBAC -------------------------------------------------------------------------------------


def build_autoscaler_service_account(cluster: RayCluster) -> JSONObject:
    """The autoscaler's ServiceAccount, named like the head's serviceAccountName (clipped).

    The caller must not create it when the user set serviceAccountName on the head: KubeRay
    expects the user to own that account.
    """
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(cluster, names.autoscaler_service_account_name(cluster)),
    }


def build_autoscaler_role(cluster: RayCluster) -> JSONObject:
    """The Role that lets the autoscaler watch pods and patch the RayCluster."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _metadata(cluster, cluster.name),
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
            {"apiGroups": [k.GROUP], "resources": ["rayclusters"], "verbs": ["get", "patch"]},
        ],
    }


def build_autoscaler_role_binding(cluster: RayCluster) -> JSONObject:
    """The RoleBinding from the autoscaler Role to its ServiceAccount."""
    subject = {
        "kind": "ServiceAccount",
        "name": names.check_name(names.autoscaler_service_account_name(cluster)),
        "namespace": cluster.namespace,
    }
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(cluster, cluster.name),
        "subjects": [subject],
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": names.check_name(cluster.name),
        },
    }


def _metadata(cluster: RayCluster, name: str) -> JSONObject:
    return {
        "name": names.check_name(name),
        "namespace": cluster.namespace,
        "labels": names.rbac_labels(cluster.name),
        "ownerReferences": [names.owner_reference(cluster)],
    }
