"""RayCluster (ray.io/v1): spec and status with KubeRay's field names."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from crds.common import (
    Bool,
    Condition,
    Int32,
    Int64,
    IntOrString,
    JSONObject,
    RayModel,
    RayObject,
    Str,
    StringMap,
    Time,
)
from crds.enums import (
    AuthMode,
    AutoscalerVersion,
    GcsFaultToleranceBackend,
    GcsStorageDeletionPolicy,
    IngressPathType,
    NetworkPolicyMode,
    RayClusterUpgradeType,
    UpscalingMode,
)


class RayClusterUpgradeStrategy(RayModel):
    """`spec.upgradeStrategy`."""

    type: RayClusterUpgradeType | None = None


class AuthOptions(RayModel):
    """`spec.authOptions`: Ray token authentication."""

    enable_k8s_token_auth: Bool | None = Field(default=None, alias="enableK8sTokenAuth")
    secret_name: Str | None = None
    mode: AuthMode | None = None


class RedisCredential(RayModel):
    """A Redis username or password: a literal value or a reference (env var source)."""

    value_from: JSONObject | None = None
    value: Str | None = None


class GcsEmbeddedStorage(RayModel):
    """`gcsFaultToleranceOptions.storage`: the PVC behind the embedded RocksDB backend."""

    claim_name: Str | None = None
    size: IntOrString | None = None
    storage_class_name: Str | None = None
    access_modes: list[Str] | None = None
    sub_path: Str | None = None
    deletion_policy: GcsStorageDeletionPolicy | None = None


class GcsFaultToleranceOptions(RayModel):
    """`spec.gcsFaultToleranceOptions`."""

    backend: GcsFaultToleranceBackend | None = None
    redis_username: RedisCredential | None = None
    redis_password: RedisCredential | None = None
    external_storage_namespace: Str | None = None
    redis_address: Str | None = None
    storage: GcsEmbeddedStorage | None = None


class CollectorOptions(RayModel):
    """`spec.historyServerOptions.collectorOptions`."""

    image: Str | None = None
    image_pull_policy: Str | None = None
    resources: JSONObject | None = None
    env: list[JSONObject] | None = None


class HistoryServerOptions(RayModel):
    """`spec.historyServerOptions`."""

    collector_options: CollectorOptions | None = None


class NetworkPolicyRules(RayModel):
    """Extra ingress/egress rules added to the generated NetworkPolicy."""

    ingress_rules: list[JSONObject] | None = None
    egress_rules: list[JSONObject] | None = None


class WorkerGroupNetworkPolicyRules(NetworkPolicyRules):
    """Per-worker-group NetworkPolicy rules."""

    group_name: Str


class NetworkPolicyConfig(RayModel):
    """`spec.networkPolicy`."""

    mode: NetworkPolicyMode | None = None
    head: NetworkPolicyRules | None = None
    worker: NetworkPolicyRules | None = None
    worker_groups: list[WorkerGroupNetworkPolicyRules] | None = None


class TLSOptions(RayModel):
    """`spec.tlsOptions`: mTLS through cert-manager."""

    enabled: Bool | None = None


class IngressOptions(RayModel):
    """`spec.headGroupSpec.ingressOptions`."""

    host: Str | None = None
    path: Str | None = None
    path_type: IngressPathType | None = None
    tls: list[JSONObject] | None = None


class HeadGroupSpec(RayModel):
    """`spec.headGroupSpec`."""

    template: JSONObject
    head_service: JSONObject | None = None
    enable_ingress: Bool | None = None
    ingress_options: IngressOptions | None = None
    resources: StringMap | None = None
    labels: StringMap | None = None
    ray_start_params: StringMap | None = None
    service_type: Str | None = None


class ScaleStrategy(RayModel):
    """`workerGroupSpecs[].scaleStrategy`."""

    workers_to_delete: list[Str] | None = None


class WorkerGroupSpec(RayModel):
    """`spec.workerGroupSpecs[]`."""

    suspend: Bool | None = None
    group_name: Str
    replicas: Int32 | None = None
    min_replicas: Int32 | None = None
    max_replicas: Int32 | None = None
    idle_timeout_seconds: Int32 | None = None
    priority: Int32 | None = None
    resources: StringMap | None = None
    labels: StringMap | None = None
    ray_start_params: StringMap | None = None
    template: JSONObject
    scale_strategy: ScaleStrategy | None = None
    num_of_hosts: Int32 | None = None


class AutoscalerOptions(RayModel):
    """`spec.autoscalerOptions`."""

    resources: JSONObject | None = None
    image: Str | None = None
    image_pull_policy: Str | None = None
    security_context: JSONObject | None = None
    idle_timeout_seconds: Int32 | None = None
    upscaling_mode: UpscalingMode | None = None
    version: AutoscalerVersion | None = None
    env: list[JSONObject] | None = None
    env_from: list[JSONObject] | None = None
    volume_mounts: list[JSONObject] | None = None
    command: list[Str] | None = None
    args: list[Str] | None = None


class RayClusterSpec(RayModel):
    """RayCluster `spec` (also embedded in RayJob and RayService)."""

    upgrade_strategy: RayClusterUpgradeStrategy | None = None
    auth_options: AuthOptions | None = None
    suspend: Bool | None = None
    managed_by: Str | None = None
    autoscaler_options: AutoscalerOptions | None = None
    head_service_annotations: StringMap | None = None
    enable_in_tree_autoscaling: Bool | None = None
    gcs_fault_tolerance_options: GcsFaultToleranceOptions | None = None
    history_server_options: HistoryServerOptions | None = None
    network_policy: NetworkPolicyConfig | None = None
    tls_options: TLSOptions | None = None
    head_group_spec: HeadGroupSpec
    ray_version: Str | None = None
    worker_group_specs: list[WorkerGroupSpec] | None = None


class HeadInfo(RayModel):
    """`status.head`."""

    pod_ip: Str | None = Field(default=None, alias="podIP")
    service_ip: Str | None = Field(default=None, alias="serviceIP")
    pod_name: Str | None = None
    service_name: Str | None = None


class RayClusterStatus(RayModel):
    """RayCluster `status`; also copied into RayJob and RayService statuses."""

    # `state` stays a string: KubeRay writes "" before the first transition and older
    # releases wrote values ("unhealthy") that are no longer members of ClusterState.
    state: Str | None = None
    desired_cpu: IntOrString | None = Field(default=None, alias="desiredCPU")
    desired_memory: IntOrString | None = None
    desired_gpu: IntOrString | None = Field(default=None, alias="desiredGPU")
    desired_tpu: IntOrString | None = Field(default=None, alias="desiredTPU")
    last_update_time: Time | None = None
    state_transition_times: dict[Str, Time] | None = None
    endpoints: StringMap | None = None
    head: HeadInfo | None = None
    reason: Str | None = None
    conditions: list[Condition] | None = None
    ready_worker_replicas: Int32 | None = None
    available_worker_replicas: Int32 | None = None
    desired_worker_replicas: Int32 | None = None
    min_worker_replicas: Int32 | None = None
    max_worker_replicas: Int32 | None = None
    observed_generation: Int64 | None = None

    @classmethod
    def zero(cls) -> RayClusterStatus:
        """None copied yet, as KubeRay writes it: a struct field Go cannot omit, zero quantities."""
        return cls(desired_cpu="0", desired_memory="0", desired_gpu="0", desired_tpu="0")


class RayCluster(RayObject):
    """A RayCluster custom resource."""

    kind: Literal["RayCluster"] = "RayCluster"
    spec: RayClusterSpec
    status: RayClusterStatus | None = None
