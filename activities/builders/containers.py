"""What KubeRay changes inside a Ray pod's containers: command, env, volumes, GCS wait.

These are the parts of `pod.go` BuildPod and DefaultWorkerPodTemplate that work on one
container at a time. `pods.py` calls them in KubeRay's order, which matters: env lists are
ordered, and the GCS wait container copies the Ray container's env as the user wrote it.
"""

from __future__ import annotations

import copy

from activities.builders.autoscaler import shell_command
from activities.builders.env import append_env, env_var, field_env, set_default_env
from activities.builders.names import CREATOR_RAYSERVICE
from crds import constants as k
from crds.common import JSONObject
from crds.enums import RayNodeType
from crds.quantities import try_parse_quantity

ULIMIT_COMMAND = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}"
LOCAL_HOST = "127.0.0.1"
SHARED_MEMORY_VOLUME = "shared-mem"
SHARED_MEMORY_PATH = "/dev/shm"
RAY_LOGS_VOLUME = "ray-logs"
RAY_LOGS_PATH = "/tmp/ray"
WAIT_GCS_READY = "wait-gcs-ready"
# The GCS wait loop only sends a health check every few seconds: a fixed, small budget keeps
# it schedulable under ResourceQuotas and off GPUs.
WAIT_GCS_READY_RESOURCES = {"cpu": "200m", "memory": "256Mi"}


def command_text(container: JSONObject) -> str:
    """The user's command and args as one string, spaced the way KubeRay joins them."""
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    return "".join(f" {word} " for word in words)


def set_ray_command(
    container: JSONObject, start_command: str, *, overwrite: bool, login_shell: bool
) -> None:
    """Make the container run `ray start`, after the user's own command if there is one.

    Nothing changes when the user's command already runs `ray start` or the cluster asks to
    keep the container command (`ray.io/overwrite-container-cmd: "true"`).
    """
    user_command = command_text(container)
    if overwrite or "ray start" in user_command:
        return
    generated = f"{ULIMIT_COMMAND}; {start_command}"
    container["command"] = shell_command(login_shell)
    # `ray start --block` never returns, so the user's command has to run first.
    container["args"] = [f"{user_command} && {generated}" if user_command else generated]


def head_address(node_type: RayNodeType, head_fqdn: str, port: str) -> str:
    """The GCS address a node uses: localhost on the head, the head Service elsewhere."""
    host = LOCAL_HOST if node_type is RayNodeType.HEAD else head_fqdn
    return f"{host}:{port}"


def add_ray_env(
    container: JSONObject,
    node_type: RayNodeType,
    *,
    head_fqdn: str,
    port: str,
    start_command: str,
    creator: str,
) -> None:
    """Append the env KubeRay injects into the Ray container, in KubeRay's order."""
    if node_type is RayNodeType.WORKER:
        append_env(container, *_head_ip_env(head_fqdn))
    append_env(
        container,
        field_env("RAY_CLUSTER_NAME", f"metadata.labels['{k.LABEL_CLUSTER}']"),
        field_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
        # The autoscaler (v2) identifies nodes by pod name and group.
        field_env("RAY_CLOUD_INSTANCE_ID", "metadata.name"),
        field_env("RAY_NODE_TYPE_NAME", f"metadata.labels['{k.LABEL_GROUP}']"),
        env_var("KUBERAY_GEN_RAY_START_CMD", start_command),
    )
    set_default_env(container, env_var("RAY_PORT", port))
    if creator == CREATOR_RAYSERVICE:
        # Fail fast instead of hanging, so Serve can route around a dead node.
        set_default_env(container, env_var("RAY_timeout_ms_task_wait_for_death_info", "0"))
        set_default_env(container, env_var("RAY_gcs_server_request_timeout_seconds", "5"))
        set_default_env(container, env_var("RAY_SERVE_KV_TIMEOUT_S", "5"))
    set_default_env(container, env_var("RAY_ADDRESS", head_address(node_type, head_fqdn, port)))
    set_default_env(container, env_var("RAY_USAGE_STATS_KUBERAY_IN_USE", "1"))
    if node_type is RayNodeType.HEAD:
        tags = f"kuberay_version={k.KUBERAY_VERSION};kuberay_crd={creator}"
        append_env(container, env_var("RAY_USAGE_STATS_EXTRA_TAGS", tags))
    set_default_env(container, env_var("RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "1"))


def add_init_container_env(init_container: JSONObject, head_fqdn: str) -> None:
    """Every init container learns where the head is (TLS setup, GCS wait)."""
    append_env(init_container, *_head_ip_env(head_fqdn))


def _head_ip_env(head_fqdn: str) -> tuple[JSONObject, JSONObject]:
    # RAY_IP (the bare Service name) is deprecated but still read by older images.
    return env_var("FQ_RAY_IP", head_fqdn), env_var("RAY_IP", head_fqdn.split(".")[0])


def wait_gcs_ready_container(
    ray_container: JSONObject, head_fqdn: str, port: str, *, login_shell: bool
) -> JSONObject:
    """The worker init container that blocks until the head's GCS answers health checks.

    It copies the Ray container's env and mounts (TLS settings may live there) as the user
    wrote them, before KubeRay adds its own.
    """
    container: JSONObject = {
        "name": WAIT_GCS_READY,
        "image": ray_container.get("image", ""),
        "command": shell_command(login_shell),
        "args": [_wait_gcs_script(f"{head_fqdn}:{port}")],
        "resources": {
            "limits": dict(WAIT_GCS_READY_RESOURCES),
            "requests": dict(WAIT_GCS_READY_RESOURCES),
        },
    }
    for field in ("imagePullPolicy", "securityContext", "env", "volumeMounts"):
        if ray_container.get(field):
            container[field] = copy.deepcopy(ray_container[field])
    return container


def _wait_gcs_script(address: str) -> str:
    indent = "\n" + "\t" * 5
    lines = [
        "SECONDS=0",
        "while true; do",
        "\tif (( SECONDS <= 120 )); then",
        f"\t\tif ray health-check --address {address} > /dev/null 2>&1; then",
        '\t\t\techo "GCS is ready."',
        "\t\t\tbreak",
        "\t\tfi",
        '\t\techo "$SECONDS seconds elapsed: Waiting for GCS to be ready."',
        "\telse",
        f"\t\tif ray health-check --address {address}; then",
        '\t\t\techo "GCS is ready. Any error messages above can be safely ignored."',
        "\t\t\tbreak",
        "\t\tfi",
        '\t\techo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. For '
        "troubleshooting, refer to the FAQ at "
        'https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html."',
        "\tfi",
        "\tsleep 5",
        "done",
    ]
    return indent + indent.join(lines) + "\n" + "\t" * 4


def add_empty_dir(
    spec: JSONObject, container: JSONObject, volume: str, mount_path: str, *, memory: bool
) -> None:
    """Mount an emptyDir into a container unless something is already mounted there.

    A memory-backed emptyDir is sized to the container's memory limit (else its request), so
    the object store cannot exceed what the container may use.
    """
    mounts = container.get("volumeMounts") or []
    if any(mount.get("mountPath") == mount_path for mount in mounts):
        return
    if not any(existing.get("name") == volume for existing in spec.get("volumes") or []):
        empty_dir: JSONObject = {}
        if memory:
            empty_dir["medium"] = "Memory"
            size = _memory_of(container)
            if size is not None:
                empty_dir["sizeLimit"] = size
        spec["volumes"] = [*(spec.get("volumes") or []), {"name": volume, "emptyDir": empty_dir}]
    container["volumeMounts"] = [*mounts, {"mountPath": mount_path, "name": volume}]


def _memory_of(container: JSONObject) -> str | None:
    resources = container.get("resources") or {}
    for kind in ("limits", "requests"):
        value = (resources.get(kind) or {}).get("memory")
        if value is not None:
            parsed = try_parse_quantity(value)
            # The API server stores quantities in canonical form ("2048Mi" becomes "2Gi").
            return str(parsed) if parsed is not None else str(value)
    return None


def ensure_metrics_port(container: JSONObject) -> None:
    """Give the Ray container a `metrics` port (8080) for Prometheus unless it has one."""
    ports = container.get("ports") or []
    if not any(port.get("name") == k.PORT_NAME_METRICS for port in ports):
        metrics = {"name": k.PORT_NAME_METRICS, "containerPort": k.PORT_METRICS}
        container["ports"] = [*ports, metrics]
