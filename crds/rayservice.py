"""RayService (ray.io/v1): spec and status with KubeRay's field names."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from crds.common import Bool, Condition, Int32, Int64, JSONObject, RayModel, RayObject, Str, Time
from crds.enums import RayServiceUpgradeType
from crds.raycluster import RayClusterSpec, RayClusterStatus


class ClusterUpgradeOptions(RayModel):
    """`spec.upgradeStrategy.clusterUpgradeOptions` (incremental upgrades)."""

    max_surge_percent: Int32 | None = None
    step_size_percent: Int32 | None = None
    interval_seconds: Int32 | None = None
    gateway_class_name: Str | None = None


class RayServiceUpgradeStrategy(RayModel):
    """`spec.upgradeStrategy`."""

    type: RayServiceUpgradeType | None = None
    cluster_upgrade_options: ClusterUpgradeOptions | None = None


class RayServiceSpec(RayModel):
    """RayService `spec`."""

    ray_cluster_deletion_delay_seconds: Int32 | None = None
    service_unhealthy_second_threshold: Int32 | None = None
    deployment_unhealthy_second_threshold: Int32 | None = None
    serve_service: JSONObject | None = None
    upgrade_strategy: RayServiceUpgradeStrategy | None = None
    managed_by: Str | None = None
    serve_config_v2: Str | None = None
    ray_cluster_config: RayClusterSpec
    exclude_head_pod_from_serve_svc: Bool | None = None
    suspend: Bool | None = None


class ServeDeploymentStatus(RayModel):
    """One Serve deployment's status, copied from the dashboard."""

    # Statuses stay strings: newer Ray releases add values this code does not know.
    status: Str | None = None
    message: Str | None = None


class AppStatus(RayModel):
    """One Serve application's status, copied from the dashboard."""

    deployments: dict[Str, ServeDeploymentStatus] | None = Field(
        default=None, alias="serveDeploymentStatuses"
    )
    status: Str | None = None
    message: Str | None = None


class RayServiceStatus(RayModel):
    """`status.activeServiceStatus` / `status.pendingServiceStatus`."""

    applications: dict[Str, AppStatus] | None = Field(default=None, alias="applicationStatuses")
    target_capacity: Int32 | None = None
    traffic_routed_percent: Int32 | None = None
    last_traffic_migrated_time: Time | None = None
    ray_cluster_name: Str | None = None
    ray_cluster_status: RayClusterStatus | None = None


class RayServiceStatuses(RayModel):
    """RayService `status`."""

    conditions: list[Condition] | None = None
    last_update_time: Time | None = None
    service_status: Str | None = None
    active_service_status: RayServiceStatus | None = None
    pending_service_status: RayServiceStatus | None = None
    num_serve_endpoints: Int32 | None = None
    observed_generation: Int64 | None = None


class RayService(RayObject):
    """A RayService custom resource."""

    kind: Literal["RayService"] = "RayService"
    spec: RayServiceSpec
    status: RayServiceStatuses | None = None
