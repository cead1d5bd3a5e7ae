"""GCS fault-tolerance rules: one way to configure each setting, and backend-specific fields.

GCS FT can be switched on by the `gcsFaultToleranceOptions` block or by the older
`ray.io/ft-enabled` annotation plus env vars and rayStartParams. KubeRay injects the Redis
address, password and storage namespace itself when the block is used, so setting them a
second way would silently conflict; it rejects that. The embedded RocksDB backend owns its
env vars, volume and mount path, and takes no Redis settings; Redis takes no `storage`.
"""

from __future__ import annotations

from crds import flags
from crds.constants import (
    ANNOTATION_EXTERNAL_STORAGE_NAMESPACE,
    ANNOTATION_FT_ENABLED,
    ENV_RAY_GCS_STORAGE,
    ENV_RAY_GCS_STORAGE_PATH,
    ENV_RAY_REDIS_ADDRESS,
    ENV_REDIS_PASSWORD,
    ENV_REDIS_USERNAME,
    GCS_STORAGE_MOUNT_PATH,
    GCS_STORAGE_VOLUME_NAME,
)
from crds.enums import GcsFaultToleranceBackend
from crds.raycluster import GcsFaultToleranceOptions
from crds.validation import templates
from crds.validation.scope import ClusterScope, key_path
from crds.violations import Violation, join_path


def _head_env_path(scope: ClusterScope, index: int) -> str:
    return templates.ray_container_path(scope.head_template_path, "env", index)


def _head_env(scope: ClusterScope, *names: str) -> list[tuple[int, str]]:
    head = templates.ray_container(scope.spec.head_group_spec.template)
    if head is None:
        return []
    return list(templates.env_entries(templates.env_vars(head), names))


def _ft_enabled(scope: ClusterScope) -> bool:
    annotation = scope.annotations.get(ANNOTATION_FT_ENABLED)
    legacy_on = flags.is_on(annotation)
    return legacy_on or scope.spec.gcs_fault_tolerance_options is not None


def annotation_and_options(scope: ClusterScope) -> list[Violation]:
    """The `ray.io/ft-enabled` annotation and `gcsFaultToleranceOptions` are exclusive."""
    if not scope.annotations.get(ANNOTATION_FT_ENABLED):
        return []
    if scope.spec.gcs_fault_tolerance_options is None:
        return []
    message = (
        f"the {ANNOTATION_FT_ENABLED} annotation and gcsFaultToleranceOptions are both set; "
        "remove the annotation and configure GCS fault tolerance only here"
    )
    return [Violation(scope.at("gcsFaultToleranceOptions"), message)]


def redis_address_without_ft(scope: ClusterScope) -> list[Violation]:
    """RAY_REDIS_ADDRESS alone would half-enable FT; KubeRay asks for the options block."""
    if _ft_enabled(scope):
        return []
    message = (
        f"{ENV_RAY_REDIS_ADDRESS} turns on GCS fault tolerance, but gcsFaultToleranceOptions "
        "is not set; set gcsFaultToleranceOptions.redisAddress instead"
    )
    return [
        Violation(_head_env_path(scope, index), message)
        for index, _ in _head_env(scope, ENV_RAY_REDIS_ADDRESS)
    ]


def settings_outside_options(scope: ClusterScope) -> list[Violation]:
    """With the options block, Redis settings must not also come from elsewhere."""
    options = scope.spec.gcs_fault_tolerance_options
    if options is None:
        return []
    found: list[Violation] = []
    params = scope.spec.head_group_spec.ray_start_params or {}
    if params.get("redis-password"):
        path = key_path(scope.at("headGroupSpec", "rayStartParams"), "redis-password")
        found.append(Violation(path, _use_options("redis-password", "redisPassword")))
    replacement = {ENV_REDIS_PASSWORD: "redisPassword", ENV_RAY_REDIS_ADDRESS: "redisAddress"}
    for index, name in _head_env(scope, ENV_REDIS_PASSWORD, ENV_RAY_REDIS_ADDRESS):
        found.append(Violation(_head_env_path(scope, index), _use_options(name, replacement[name])))
    if scope.annotations.get(ANNOTATION_EXTERNAL_STORAGE_NAMESPACE):
        path = key_path("metadata.annotations", ANNOTATION_EXTERNAL_STORAGE_NAMESPACE)
        message = _use_options(ANNOTATION_EXTERNAL_STORAGE_NAMESPACE, "externalStorageNamespace")
        found.append(Violation(path, message))
    return found


def _use_options(what: str, field_name: str) -> str:
    return (
        f"{what} cannot be set when gcsFaultToleranceOptions is used; "
        f"set gcsFaultToleranceOptions.{field_name} instead"
    )


def redis_username(scope: ClusterScope) -> list[Violation]:
    """A Redis username can only be given through `gcsFaultToleranceOptions.redisUsername`."""
    found: list[Violation] = []
    params = scope.spec.head_group_spec.ray_start_params or {}
    if params.get("redis-username"):
        path = key_path(scope.at("headGroupSpec", "rayStartParams"), "redis-username")
        found.append(Violation(path, _username_message("redis-username")))
    for index, _ in _head_env(scope, ENV_REDIS_USERNAME):
        found.append(Violation(_head_env_path(scope, index), _username_message(ENV_REDIS_USERNAME)))
    return found


def _username_message(what: str) -> str:
    return f"{what} is not supported; set gcsFaultToleranceOptions.redisUsername instead"


def backend_fields(scope: ClusterScope) -> list[Violation]:
    """Fields that belong to the other backend."""
    options = scope.spec.gcs_fault_tolerance_options
    if options is None:
        return []
    base = scope.at("gcsFaultToleranceOptions")
    if options.backend != GcsFaultToleranceBackend.ROCKSDB:
        if options.storage is None:
            return []
        message = "storage only applies to the rocksdb backend; remove it or set backend: rocksdb"
        return [Violation(join_path(base, "storage"), message)]
    return _redis_fields_on_rocksdb(base, options) + _claim_name_conflicts(base, options)


def _redis_fields_on_rocksdb(base: str, options: GcsFaultToleranceOptions) -> list[Violation]:
    given = {
        "redisAddress": bool(options.redis_address),
        "redisUsername": options.redis_username is not None,
        "redisPassword": options.redis_password is not None,
        "externalStorageNamespace": bool(options.external_storage_namespace),
    }
    return [
        Violation(join_path(base, name), f"{name} is a Redis setting; the rocksdb backend has none")
        for name, is_set in given.items()
        if is_set
    ]


def _claim_name_conflicts(base: str, options: GcsFaultToleranceOptions) -> list[Violation]:
    storage = options.storage
    if storage is None or not storage.claim_name:
        return []
    given = [
        name
        for name, is_set in (
            ("size", storage.size is not None),
            ("storageClassName", storage.storage_class_name is not None),
            ("accessModes", bool(storage.access_modes)),
        )
        if is_set
    ]
    if not given:
        return []
    message = (
        f"claimName names an existing PVC, so {', '.join(given)} cannot be set "
        "(they only shape the PVC KubeRay creates)"
    )
    return [Violation(join_path(base, "storage", "claimName"), message)]


def rocksdb_reserved_names(scope: ClusterScope) -> list[Violation]:
    """The rocksdb backend owns its env vars, volume and mount path in the head pod."""
    options = scope.spec.gcs_fault_tolerance_options
    if options is None or options.backend != GcsFaultToleranceBackend.ROCKSDB:
        return []
    found = [
        Violation(_head_env_path(scope, index), f"{name} is managed by KubeRay for rocksdb")
        for index, name in _head_env(scope, ENV_RAY_GCS_STORAGE, ENV_RAY_GCS_STORAGE_PATH)
    ]
    template = scope.spec.head_group_spec.template
    head = templates.ray_container(template)
    for index, mount in enumerate(templates.volume_mounts(head or {})):
        if mount.get("mountPath") == GCS_STORAGE_MOUNT_PATH or (
            mount.get("name") == GCS_STORAGE_VOLUME_NAME
        ):
            path = templates.ray_container_path(scope.head_template_path, "volumeMounts", index)
            found.append(Violation(path, _reserved_message("a volume mount")))
    for index, volume in enumerate(templates.volumes(template)):
        if volume.get("name") == GCS_STORAGE_VOLUME_NAME:
            path = join_path(scope.head_template_path, "spec", "volumes", index)
            found.append(Violation(path, _reserved_message("a volume")))
    return found


def _reserved_message(what: str) -> str:
    return (
        f"{what} named {GCS_STORAGE_VOLUME_NAME!r} or mounted at {GCS_STORAGE_MOUNT_PATH} "
        "is managed by KubeRay for the rocksdb backend"
    )


RULES = (
    annotation_and_options,
    redis_address_without_ft,
    settings_outside_options,
    backend_fields,
    rocksdb_reserved_names,
    redis_username,
)
