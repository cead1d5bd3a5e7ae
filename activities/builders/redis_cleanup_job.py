"""The Redis cleanup Job KubeRay runs when a RayCluster with Redis GCS FT is deleted.

A clone of the head pod (same image, same Redis address, password reference and storage
namespace) whose only container runs Ray's own `cleanup_redis_storage`, so that the keys the
cluster left in Redis are removed with exactly the code Ray uses to write them. One attempt
(`backoffLimit: 0`) within 300 s; the workflow removes the finalizer when it ends either way.
The password is never in this manifest: the clone reads it from the same env source the head
uses (a secretKeyRef, or the value the user wrote into the CR).
"""

from __future__ import annotations

from activities.builders import names
from activities.builders.autoscaler import shell_command
from activities.builders.env import append_env, has_env
from activities.builders.options import DEFAULT_OPTIONS, BuildOptions
from activities.builders.pods import build_head_pod
from activities.kube.vocabulary import RestartPolicy
from crds import constants as k
from crds.common import JSONObject
from crds.enums import RayNodeType
from crds.raycluster import RayCluster

CLEANUP_SUFFIX = "redis-cleanup"

_SCRIPT = (
    # KubeRay's first line tells a user reading the Job's log where to look if it fails.
    'echo "To get more information about manually deleting the storage namespace in Redis and '
    "removing the RayCluster's finalizer, please check "
    "https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html for more "
    'details." && '
    "python -c "
    '"from ray._private.gcs_utils import cleanup_redis_storage; '
    "from urllib.parse import urlparse; "
    "import os; "
    "import sys; "
    "redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
    "redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; "
    "parsed = urlparse(redis_address); "
    "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, "
    "{username}password=os.getenv('REDIS_PASSWORD', parsed.password or ''), "
    "use_ssl=parsed.scheme=='rediss', "
    "storage_namespace=os.getenv('RAY_external_storage_namespace')) else None\""
)
_USERNAME = "username=os.getenv('REDIS_USERNAME', parsed.username), "


def cleanup_job_name(cluster_name: str) -> str:
    """`<cluster>-redis-cleanup`, trimmed to a 63-character label like KubeRay's."""
    return names.check_label(f"{cluster_name}-{CLEANUP_SUFFIX}")


def build_redis_cleanup_job(
    cluster: RayCluster, options: BuildOptions = DEFAULT_OPTIONS
) -> JSONObject:
    """The cleanup Job for a RayCluster whose GCS state lives in Redis."""
    pod = build_head_pod(cluster, cleanup_job_name(cluster.name), options)
    meta, spec = pod["metadata"], pod["spec"]
    meta["labels"][k.LABEL_NODE_TYPE] = RayNodeType.REDIS_CLEANUP.value
    container = spec["containers"][k.RAY_CONTAINER_INDEX]
    spec["containers"] = [container]
    spec["initContainers"] = [
        c for c in spec.get("initContainers") or [] if c.get("name") != "wait-for-tls-ip-san"
    ]
    username = _USERNAME if has_env(container, k.ENV_REDIS_USERNAME) else ""
    container["command"] = shell_command(options.login_shell)
    container["args"] = [_SCRIPT.format(username=username)]
    container.pop("livenessProbe", None)
    container.pop("readinessProbe", None)
    append_env(
        container,
        {"name": "RAY_redis_db_connect_retries", "value": "120"},
        {"name": "RAY_redis_db_connect_wait_milliseconds", "value": "500"},
    )
    fixed = {"cpu": "200m", "memory": "256Mi"}
    container["resources"] = {"limits": dict(fixed), "requests": dict(fixed)}
    spec["restartPolicy"] = RestartPolicy.NEVER.value
    # KubeRay's template keeps the head pod's metadata as it builds it: `generateName`,
    # namespace and owner included (the Job controller gives the pods its own owner).
    template_meta = {
        "generateName": names.head_pod_name_prefix(cluster),
        "namespace": cluster.namespace,
        **{k_: v for k_, v in meta.items() if k_ in ("labels", "annotations")},
        "ownerReferences": [names.owner_reference(cluster)],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": cleanup_job_name(cluster.name),
            "namespace": cluster.namespace,
            "labels": dict(meta["labels"]),
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [names.owner_reference(cluster)],
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": 300,
            "template": {"metadata": template_meta, "spec": spec},
        },
    }
