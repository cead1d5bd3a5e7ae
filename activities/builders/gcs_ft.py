"""GCS fault tolerance wiring: external Redis or embedded RocksDB on a PVC.

With GCS FT on, a restarted head reloads cluster state and workers wait for it instead of
exiting, which is what keeps Serve apps and detached actors alive across head failures
(`pod.go` configureGCSFaultTolerance, configureRedisFT, configureEmbeddedFT; `gcs_ft.go`).

The Redis password is a value the user wrote into the CR. It goes into the head pod's env and
nowhere else: nothing here logs it or copies it into another object.
"""

from __future__ import annotations

from activities.builders import names
from activities.builders.env import append_env, env_var, has_env, set_default_env
from crds import constants as k
from crds import flags
from crds.common import JSONObject
from crds.enums import GcsFaultToleranceBackend, GcsStorageDeletionPolicy, RayNodeType
from crds.raycluster import GcsFaultToleranceOptions, RayCluster, RedisCredential

ENV_GCS_RECONNECT_TIMEOUT = "RAY_gcs_rpc_server_reconnect_timeout_s"
GCS_STORAGE_ROCKSDB = "rocksdb"
DEFAULT_ACCESS_MODES = ("ReadWriteOnce",)


def is_ft_enabled(cluster: RayCluster) -> bool:
    """FT is on with `gcsFaultToleranceOptions` or the legacy `ray.io/ft-enabled=true`."""
    legacy = flags.is_on(cluster.annotations.get(k.ANNOTATION_FT_ENABLED))
    return legacy or cluster.spec.gcs_fault_tolerance_options is not None


def is_embedded(options: GcsFaultToleranceOptions | None) -> bool:
    """Whether FT uses the embedded RocksDB backend (redis when the backend is unset)."""
    return options is not None and options.backend is GcsFaultToleranceBackend.ROCKSDB


def configure_gcs_ft(
    template: JSONObject, cluster: RayCluster, node_type: RayNodeType, params: dict[str, str]
) -> None:
    """Add FT annotations, env, start params and volumes to a pod template, in place."""
    enabled = is_ft_enabled(cluster)
    metadata = template["metadata"] = template.get("metadata") or {}
    annotations = metadata["annotations"] = metadata.get("annotations") or {}
    if node_type is RayNodeType.HEAD:
        annotations[k.ANNOTATION_FT_ENABLED] = flags.text(enabled)
    if not enabled:
        return
    container = template["spec"]["containers"][k.RAY_CONTAINER_INDEX]
    if node_type is RayNodeType.WORKER:
        # Workers must outlive a head restart (typically ~2 minutes); Ray's default is 60 s.
        set_default_env(
            container, env_var(ENV_GCS_RECONNECT_TIMEOUT, k.DEFAULT_WORKER_GCS_RECONNECT_TIMEOUT_S)
        )
        return
    options = cluster.spec.gcs_fault_tolerance_options
    if is_embedded(options):
        _configure_embedded(template, container, cluster)
    else:
        _configure_redis(annotations, container, cluster, params)


def external_storage_namespace(cluster: RayCluster) -> str:
    """The Redis key namespace: the option, else the annotation, else the cluster UID."""
    options = cluster.spec.gcs_fault_tolerance_options
    if options is not None and options.external_storage_namespace:
        return options.external_storage_namespace
    annotation = cluster.annotations.get(k.ANNOTATION_EXTERNAL_STORAGE_NAMESPACE)
    if annotation is not None:
        return annotation
    return cluster.metadata.uid or ""


def _configure_redis(
    annotations: dict[str, str], container: JSONObject, cluster: RayCluster, params: dict[str, str]
) -> None:
    storage_namespace = external_storage_namespace(cluster)
    annotations[k.ANNOTATION_EXTERNAL_STORAGE_NAMESPACE] = storage_namespace
    set_default_env(container, env_var(k.ENV_RAY_EXTERNAL_STORAGE_NS, storage_namespace))
    options = cluster.spec.gcs_fault_tolerance_options
    if options is None:
        # Legacy clusters may put the password in rayStartParams; the Redis cleanup Job reads it
        # from the env, so KubeRay mirrors it there.
        password = params.get("redis-password")
        if password is not None and not has_env(container, k.ENV_REDIS_PASSWORD):
            append_env(container, env_var(k.ENV_REDIS_PASSWORD, password))
        return
    append_env(container, env_var(k.ENV_RAY_REDIS_ADDRESS, options.redis_address or ""))
    # Ray reads the credentials from the env through shell expansion of the flag values.
    _add_credential(
        container, params, "redis-username", k.ENV_REDIS_USERNAME, options.redis_username
    )
    _add_credential(
        container, params, "redis-password", k.ENV_REDIS_PASSWORD, options.redis_password
    )


def _add_credential(
    container: JSONObject,
    params: dict[str, str],
    flag: str,
    env_name: str,
    credential: RedisCredential | None,
) -> None:
    if credential is None:
        return
    params[flag] = f"${env_name}"
    append_env(container, env_var(env_name, credential.value or "", credential.value_from))


def _configure_embedded(template: JSONObject, container: JSONObject, cluster: RayCluster) -> None:
    set_default_env(container, env_var(k.ENV_RAY_GCS_STORAGE, GCS_STORAGE_ROCKSDB))
    set_default_env(container, env_var(k.ENV_RAY_GCS_STORAGE_PATH, k.GCS_STORAGE_MOUNT_PATH))
    options = cluster.spec.gcs_fault_tolerance_options
    sub_path = options.storage.sub_path if options and options.storage else None
    mount: JSONObject = {"name": k.GCS_STORAGE_VOLUME_NAME, "mountPath": k.GCS_STORAGE_MOUNT_PATH}
    if sub_path:
        mount["subPath"] = sub_path
    container["volumeMounts"] = [*(container.get("volumeMounts") or []), mount]
    volume = {
        "name": k.GCS_STORAGE_VOLUME_NAME,
        "persistentVolumeClaim": {"claimName": names.gcs_storage_pvc_name(cluster)},
    }
    spec = template["spec"]
    spec["volumes"] = [*(spec.get("volumes") or []), volume]


def build_gcs_storage_pvc(cluster: RayCluster) -> JSONObject | None:
    """The operator-managed PVC of embedded GCS storage, or None when there must be none.

    There is none without embedded FT or with `storage.claimName` (a user-owned claim). With
    `deletionPolicy: Retain` the PVC has no ownerReference, so it survives the cluster.
    """
    options = cluster.spec.gcs_fault_tolerance_options
    if not is_ft_enabled(cluster) or not is_embedded(options) or options is None:
        return None
    storage = options.storage
    if storage is not None and storage.claim_name:
        return None
    metadata: JSONObject = {
        "name": names.gcs_storage_pvc_name(cluster),
        "namespace": cluster.namespace,
        "labels": {k.LABEL_CLUSTER: cluster.name},
    }
    retain = storage is not None and storage.deletion_policy is GcsStorageDeletionPolicy.RETAIN
    if not retain:
        metadata["ownerReferences"] = [names.owner_reference(cluster)]
    spec: JSONObject = {
        "accessModes": list(storage.access_modes or DEFAULT_ACCESS_MODES)
        if storage
        else list(DEFAULT_ACCESS_MODES),
        "resources": {"requests": {"storage": _size(storage.size if storage else None)}},
    }
    if storage is not None and storage.storage_class_name is not None:
        spec["storageClassName"] = storage.storage_class_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}


def _size(size: int | str | None) -> str:
    return k.DEFAULT_GCS_STORAGE_SIZE if size is None else str(size)
