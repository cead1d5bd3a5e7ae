"""The specs KubeRay refuses because a feature gate they need is off, with KubeRay's messages.

Apart from `validate`: the gates are the operator's setting, not the object's, so the worker
computes these in its read of the object (the result lands in the workflow's history) and the
workflow reports them with the rest. The messages are v1.7.0's (`utils/validation.go`),
after the field's path.
"""

from __future__ import annotations

from crds.common import RayObject
from crds.enums import GcsFaultToleranceBackend
from crds.feature_gates import FeatureGates, Gate
from crds.raycluster import RayCluster, RayClusterSpec
from crds.raycronjob import RayCronJob
from crds.rayjob import RayJob, RayJobSpec
from crds.rayservice import RayService
from crds.violations import Violation, join_path


def gate_violations(obj: RayObject, gates: FeatureGates) -> list[Violation]:
    """Every use the object makes of a feature that `gates` leaves off."""
    if isinstance(obj, RayCluster):
        return _cluster(obj.spec, "spec", gates)
    if isinstance(obj, RayJob):
        return _job(obj.spec, "spec", gates)
    if isinstance(obj, RayService):
        return _cluster(obj.spec.ray_cluster_config, "spec.rayClusterConfig", gates)
    if isinstance(obj, RayCronJob):
        return _job(obj.spec.job_template, "spec.jobTemplate", gates)
    return []


def _job(spec: RayJobSpec | None, path: str, gates: FeatureGates) -> list[Violation]:
    if spec is None:
        return []
    found = []
    if spec.deletion_strategy is not None and Gate.RAY_JOB_DELETION_POLICY not in gates:
        message = "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy"
        found.append(Violation(join_path(path, "deletionStrategy"), message))
    if spec.ray_cluster_spec is not None:
        found += _cluster(spec.ray_cluster_spec, join_path(path, "rayClusterSpec"), gates)
    return found


def _cluster(spec: RayClusterSpec, path: str, gates: FeatureGates) -> list[Violation]:
    found = []
    if Gate.RAY_JOB_DELETION_POLICY not in gates:
        for index, group in enumerate(spec.worker_group_specs or []):
            if group.suspend:
                message = (
                    f"worker group {group.group_name} can be suspended only when the "
                    "RayJobDeletionPolicy feature gate is enabled"
                )
                found.append(
                    Violation(join_path(path, "workerGroupSpecs", index, "suspend"), message)
                )
    ft = spec.gcs_fault_tolerance_options
    if (
        ft is not None
        and ft.backend == GcsFaultToleranceBackend.ROCKSDB
        and Gate.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE not in gates
    ):
        message = (
            "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions."
            "Backend: 'rocksdb') requires the GCSFaultToleranceEmbeddedStorage feature gate "
            "to be enabled"
        )
        found.append(Violation(join_path(path, "gcsFaultToleranceOptions", "backend"), message))
    if spec.history_server_options is not None and Gate.RAY_CLUSTER_HISTORY_SERVER not in gates:
        message = "RayClusterHistoryServer feature gate is not enabled"
        found.append(Violation(join_path(path, "historyServerOptions"), message))
    if spec.network_policy is not None and Gate.RAY_CLUSTER_NETWORK_POLICY not in gates:
        message = "requires the RayClusterNetworkPolicy feature gate to be enabled"
        found.append(Violation(join_path(path, "networkPolicy"), message))
    if spec.tls_options is not None and Gate.RAY_CLUSTER_MTLS not in gates:
        message = "requires the RayClusterMTLS feature gate to be enabled"
        found.append(Violation(join_path(path, "tlsOptions"), message))
    return found
