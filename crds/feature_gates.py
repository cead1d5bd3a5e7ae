"""KubeRay's feature gates: their names, v1.7.0's defaults, and the `--feature-gates` syntax.

KubeRay turns features on and off per operator (`ray-operator/pkg/features/features.go`); a
spec that uses an alpha field while its gate is off is refused (`utils/validation.go`), and
with the RayCronJob gate off no controller reads RayCronJobs at all. The same names, defaults
and syntax (`RayCronJob=true,RayClusterMTLS=true`) configure ours, so that a KubeRay install's
values carry over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class Gate(StrEnum):
    """A feature gate, by KubeRay's name."""

    RAY_CLUSTER_STATUS_CONDITIONS = "RayClusterStatusConditions"
    RAY_JOB_DELETION_POLICY = "RayJobDeletionPolicy"
    RAY_MULTI_HOST_INDEXING = "RayMultiHostIndexing"
    RAY_SERVICE_INCREMENTAL_UPGRADE = "RayServiceIncrementalUpgrade"
    RAY_CRON_JOB = "RayCronJob"
    SIDECAR_SUBMITTER_RESTART = "SidecarSubmitterRestart"
    RAY_CLUSTER_NETWORK_POLICY = "RayClusterNetworkPolicy"
    GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE = "GCSFaultToleranceEmbeddedStorage"
    RAY_CLUSTER_MTLS = "RayClusterMTLS"
    RAY_CLUSTER_HISTORY_SERVER = "RayClusterHistoryServer"
    KUBERNETES_WAS = "KubernetesWAS"


DEFAULTS: Mapping[Gate, bool] = {
    Gate.RAY_CLUSTER_STATUS_CONDITIONS: True,
    Gate.RAY_JOB_DELETION_POLICY: True,
    Gate.RAY_MULTI_HOST_INDEXING: True,
    Gate.RAY_SERVICE_INCREMENTAL_UPGRADE: True,
    Gate.RAY_CRON_JOB: False,
    Gate.SIDECAR_SUBMITTER_RESTART: False,
    Gate.RAY_CLUSTER_NETWORK_POLICY: False,
    Gate.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE: False,
    Gate.RAY_CLUSTER_MTLS: False,
    Gate.RAY_CLUSTER_HISTORY_SERVER: False,
    Gate.KUBERNETES_WAS: False,
}
"""KubeRay v1.7.0's defaults: its beta gates on, its alpha gates off."""

UNSUPPORTED: Mapping[Gate, str] = {
    Gate.RAY_CLUSTER_STATUS_CONDITIONS: (
        "kuberay-temporal always writes the RayCluster and RayService conditions"
    ),
    Gate.RAY_MULTI_HOST_INDEXING: "kuberay-temporal always labels multi-host replicas",
    Gate.RAY_SERVICE_INCREMENTAL_UPGRADE: (
        "kuberay-temporal always offers the NewClusterWithIncrementalUpgrade strategy"
    ),
    Gate.SIDECAR_SUBMITTER_RESTART: (
        "kuberay-temporal does not restart a SidecarMode submitter container"
    ),
    Gate.KUBERNETES_WAS: "kuberay-temporal has no Workload-Aware Scheduling batch scheduler",
}
"""The gates whose non-default setting this project does not carry out, and why.

Each is refused at start rather than accepted and ignored.
"""


@dataclass(frozen=True)
class FeatureGates:
    """Which gates are on: KubeRay v1.7.0's defaults unless `enabled` says otherwise."""

    enabled: frozenset[Gate] = frozenset(gate for gate, on in DEFAULTS.items() if on)

    def __contains__(self, gate: object) -> bool:
        return gate in self.enabled

    def text(self) -> str:
        """The gates set otherwise than by default, in `--feature-gates` syntax."""
        changed = [gate for gate in Gate if (gate in self.enabled) != DEFAULTS[gate]]
        return ",".join(f"{gate.value}={str(gate in self.enabled).lower()}" for gate in changed)


def parse_feature_gates(text: str) -> FeatureGates:
    """Read `Name=true,Name=false` as KubeRay's `--feature-gates` flag reads it.

    Args:
        text: Comma-separated `name=value` pairs; empty means the defaults.

    Returns:
        The defaults with each named gate set as given.

    Raises:
        ValueError: An unknown name, a value other than true or false, a pair without `=`,
            or a setting this project does not carry out (`UNSUPPORTED`).
    """
    enabled = set(FeatureGates().enabled)
    for pair in (part.strip() for part in text.split(",")):
        if not pair:
            continue
        name, equals, value = (piece.strip() for piece in pair.partition("="))
        if not equals:
            raise ValueError(f"missing bool value for {name}")
        try:
            gate = Gate(name)
        except ValueError:
            raise ValueError(f"unrecognized feature gate: {name}") from None
        on = _bool(value, gate)
        if on != DEFAULTS[gate] and gate in UNSUPPORTED:
            raise ValueError(f"{gate.value}={value} is not supported: {UNSUPPORTED[gate]}")
        if on:
            enabled.add(gate)
        else:
            enabled.discard(gate)
    return FeatureGates(frozenset(enabled))


def _bool(value: str, gate: Gate) -> bool:
    """Go's strconv.ParseBool, which KubeRay's flag uses."""
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise ValueError(f"invalid value of {gate.value}: {value}")
