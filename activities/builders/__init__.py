"""Pure builders: a RayCluster model plus a few parameters in, Kubernetes manifests out.

They reproduce the objects KubeRay's `common/` package builds (pods, Services, RBAC, PVC),
names and labels included, so tools written for KubeRay work unchanged. Nothing here calls an
API, reads the environment or the clock: activities send what these functions return, and
workflows may call them to decide (a name, a hash, a count) without any I/O.
"""

from activities.builders.autoscaler import (
    build_autoscaler_role,
    build_autoscaler_role_binding,
    build_autoscaler_service_account,
)
from activities.builders.cluster_services import (
    build_head_service,
    build_headless_service,
    build_serve_service,
    wants_headless_service,
    wants_serve_service,
)
from activities.builders.desired import desired_resources
from activities.builders.gcs_ft import build_gcs_storage_pvc
from activities.builders.hashing import recreate_hash
from activities.builders.names import head_pod_name_prefix, pod_name, worker_pod_name_prefix
from activities.builders.options import DEFAULT_OPTIONS, BuildOptions
from activities.builders.pods import build_head_pod, build_worker_pod

__all__ = [
    "DEFAULT_OPTIONS",
    "BuildOptions",
    "build_autoscaler_role",
    "build_autoscaler_role_binding",
    "build_autoscaler_service_account",
    "build_gcs_storage_pvc",
    "build_head_pod",
    "build_head_service",
    "build_headless_service",
    "build_serve_service",
    "build_worker_pod",
    "desired_resources",
    "head_pod_name_prefix",
    "pod_name",
    "recreate_hash",
    "wants_headless_service",
    "wants_serve_service",
    "worker_pod_name_prefix",
]
