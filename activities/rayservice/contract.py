"""Inputs and results of the RayService activities (the contract the workflows code against).

Kept apart from the activity implementations so that the workflow sandbox imports plain
pydantic models, not the Kubernetes or HTTP clients. Payloads name things (clusters, hashes)
instead of carrying manifests or the Serve config: the activities read the RayService CR
themselves, so neither a pod template nor a secret in a `runtime_env` reaches the history.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from activities.contract import ActivityRef
from activities.dashboard.contract import ServeStatus
from activities.raycluster.contract import RECORD_EVENT, EventSpec, RecordEventInput
from crds.raycluster import RayClusterStatus
from crds.rayservice import RayServiceSpec, RayServiceStatuses
from crds.refs import ObjectRef

__all__ = ["RECORD_EVENT", "EventSpec", "RecordEventInput"]


class ReadServiceInput(BaseModel):
    """Read a RayService and everything it owns.

    The spec travels back only when its generation differs from `known_generation`, and the
    stored status only on the first read (`known_generation` None).
    """

    ref: ObjectRef
    known_generation: int | None = None
    clusters_only: bool = False
    """Leave out spec and status (the upgrade child only watches clusters and routes)."""


class ClusterView(BaseModel):
    """One RayCluster owned by the RayService, as much as the decisions need."""

    model_config = ConfigDict(frozen=True)

    name: str
    spec_hash: str = ""
    """The cluster's `ray.io/hash-without-replicas-and-workers-to-delete` annotation."""
    goal_prefix_hash: str = ""
    """The same hash of the RayService's goal spec cut to this cluster's worker-group count:
    equal to `spec_hash` when the goal only appends worker groups (KubeRay's partial match)."""
    num_worker_groups: int = 0
    kuberay_version: str = ""
    head_pod_ready: bool = False
    """The cluster's HeadPodReady condition (gate for every dashboard call, S4)."""
    head_pod_ip: str = ""
    ready: bool = False
    """The RayCluster's `status.state` is ready."""
    deleting: bool = False
    status: RayClusterStatus | None = None


class ServiceSnapshot(BaseModel):
    """One consistent look at a RayService, its clusters, Services and routes."""

    exists: bool = True
    generation: int = 0
    deleting: bool = False
    finalizers: list[str] = Field(default_factory=list)
    annotations: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    schema_violations: list[str] = Field(default_factory=list)
    """Why the stored object does not load, or why `serveConfigV2` is not a YAML mapping."""
    gate_violations: list[str] = Field(default_factory=list)
    """The fields the spec uses whose KubeRay feature gate is off in this worker's settings."""
    spec: RayServiceSpec | None = None
    """Inline secrets redacted (`crds.redaction`) and `serveConfigV2` left out (see its hash)."""
    status: RayServiceStatuses | None = None
    goal_hash: str = ""
    """KubeRay's hash of `spec.rayClusterConfig` with `suspend` cleared."""
    serve_config_hash: str = ""
    """sha256 of `spec.serveConfigV2` (empty when there is none)."""
    clusters: list[ClusterView] = Field(default_factory=list)
    head_service_cluster: str | None = None
    """The `ray.io/cluster` selector of `<rs>-head-svc` (None: no such Service)."""
    serve_service_cluster: str | None = None
    """The `ray.io/cluster` selector of `<rs>-serve-svc` (None: no such Service)."""
    serve_endpoints: dict[str, int] = Field(default_factory=dict)
    """Ready serve endpoints (unique pod UIDs in EndpointSlices) by Service name."""
    serve_service: str = ""
    """The serve Service's name: the user's `serveService` name, else `<rs>-serve-svc` (empty
    in snapshots recorded before it was reported, which had the default name)."""
    route_weights: dict[str, int] | None = None
    """HTTPRoute backend weights by cluster name (None: no HTTPRoute)."""
    gateway_ready: bool = False
    """Gateway Accepted+Programmed and HTTPRoute parent Accepted+ResolvedRefs (S14)."""
    owned_objects: list[str] = Field(default_factory=list)
    """`Kind/name` of the Services, Gateway and HTTPRoute the RayService owns."""
    zero_downtime: bool = True
    """KubeRay's ENABLE_ZERO_DOWNTIME as the worker is configured: with it off, an unset
    `upgradeStrategy.type` means None. Read here, from history, never from the environment."""

    def cluster(self, name: str | None) -> ClusterView | None:
        """The owned cluster of that name, if it exists."""
        return next((c for c in self.clusters if c.name == name), None) if name else None


class CreateServiceClusterInput(BaseModel):
    """Create RayCluster `name` from the RayService's current spec (409 = already done).

    The activity adds KubeRay's labels and annotations (S2) and the owner reference, and
    refuses (`stale`) when the goal hash is no longer `goal_hash`.
    """

    ref: ObjectRef
    name: str
    goal_hash: str
    autoscale_from_min: bool = False
    """Incremental upgrades clear worker `replicas` so the cluster grows from minReplicas."""


class CreateServiceClusterResult(BaseModel):
    """Whether the cluster exists now; `stale` means the spec moved on meanwhile."""

    stale: bool = False


class ClusterNameInput(BaseModel):
    """Act on one RayCluster of the RayService (update in place, delete)."""

    ref: ObjectRef
    cluster: str
    reason: str = ""


class ApplyServeConfigInput(BaseModel):
    """PUT the RayService's current `serveConfigV2` to one cluster's dashboard."""

    ref: ObjectRef
    cluster: str
    target_capacity: int | None = None
    keep_deployed: bool = False
    """Change only `target_capacity` of the config the cluster already runs (the active
    cluster during an incremental upgrade, as KubeRay leaves its config alone); the spec's
    config is PUT only where the cluster runs none."""


class ApplyServeConfigResult(BaseModel):
    """The hash of the config that was PUT, remembered per cluster by the workflow (P8).

    Empty when the cluster's own running config went back (`keep_deployed`): what it runs is
    unchanged, and so is what the workflow remembers of it.
    """

    config_hash: str


class ReadServeStatusInput(BaseModel):
    """GET the declarative Serve status of one cluster."""

    ref: ObjectRef
    cluster: str


class WaitServeHealthyInput(BaseModel):
    """Poll one cluster's Serve status inside the activity, heartbeating, until healthy.

    Returns once `consecutive` polls in a row saw at least one application and all RUNNING
    (P7), or when `bound` has passed; history grows with outcomes, not with polls.
    """

    ref: ObjectRef
    cluster: str
    consecutive: int = 3
    interval_seconds: float = 2.0
    bound_seconds: float = 120.0


class ServeHealth(BaseModel):
    """What `wait_serve_healthy` saw last."""

    healthy: bool
    consecutive_healthy: int = 0
    status: ServeStatus = Field(default_factory=ServeStatus)


class SwitchServicesInput(BaseModel):
    """Point `<rs>-head-svc` and `<rs>-serve-svc` at `cluster`, creating them if missing."""

    ref: ObjectRef
    cluster: str


class HeadServeLabelInput(BaseModel):
    """Set the head pod's `ray.io/serve` label from its proxy health (S6, S7)."""

    ref: ObjectRef
    cluster: str
    exclude_head: bool = False


class GatewayInput(BaseModel):
    """Ensure Gateway `<rs>-gateway` and HTTPRoute `<rs>-httproute` with these weights.

    Also ensures each named cluster's `<cluster>-serve-svc` (owned by that RayCluster).
    """

    ref: ObjectRef
    weights: dict[str, int]


class RouteCondition(BaseModel):
    """One condition a Gateway controller reported on the Gateway or on the route's parent."""

    type: str
    status: str
    reason: str = ""
    current: bool = True
    """False when its observedGeneration is older than the object's generation (stale)."""


class GatewayRouteStatus(BaseModel):
    """What the Gateway controller reports about `<rs>-gateway` and `<rs>-httproute` (S14).

    Empty lists when nothing is reported: no controller writes status there (devcluster's
    data plane does not), or the route has no parent entry for this Gateway yet.
    """

    gateway: list[RouteCondition] = Field(default_factory=list)
    route: list[RouteCondition] = Field(default_factory=list)


class WriteServiceStatusInput(BaseModel):
    """Replace the status subresource of the RayService."""

    ref: ObjectRef
    status: RayServiceStatuses


class SetServiceSuspendInput(BaseModel):
    """Write `spec.suspend` (a user's suspend or resume signal) so the CR shows the truth."""

    ref: ObjectRef
    suspend: bool


class SetFinalizerInput(BaseModel):
    """Add or remove `ray.io/rayservice-finalizer`."""

    ref: ObjectRef
    present: bool


class ServiceObjectsInput(BaseModel):
    """Act on the RayService's own objects (its Services, Gateway and HTTPRoute)."""

    ref: ObjectRef


class RollbackAnnotationInput(BaseModel):
    """Write `ray.io/rollback-requested` on the RayService: the rolled-back goal hash."""

    ref: ObjectRef
    goal_hash: str
    reason: str = ""
    at: datetime


GATEWAY_API_MISSING = "GatewayAPIMissing"
"""Error type of `reconcile_gateway` when the API server serves no Gateway or HTTPRoute kind
(the Gateway API CRDs are not installed): not retryable, the workflow decides how long to wait."""


# The activities, as the workflows call them (the names are in recorded histories).

READ_SERVICE = ActivityRef("read_rayservice", ReadServiceInput, ServiceSnapshot)
CREATE_SERVICE_CLUSTER = ActivityRef(
    "create_service_cluster", CreateServiceClusterInput, CreateServiceClusterResult
)
UPDATE_SERVICE_CLUSTER = ActivityRef("update_service_cluster", ClusterNameInput, type(None))
DELETE_SERVICE_CLUSTER = ActivityRef("delete_service_cluster", ClusterNameInput, type(None))
DELETE_SERVICE_OBJECTS = ActivityRef("delete_service_objects", ServiceObjectsInput, type(None))
"""Delete the RayService's own Services, Gateway and HTTPRoute (suspend)."""
APPLY_SERVE_CONFIG = ActivityRef(
    "apply_serve_config", ApplyServeConfigInput, ApplyServeConfigResult
)
READ_SERVE_STATUS = ActivityRef("read_serve_status", ReadServeStatusInput, ServeStatus)
WAIT_SERVE_HEALTHY = ActivityRef("wait_serve_healthy", WaitServeHealthyInput, ServeHealth)
SWITCH_SERVICES = ActivityRef("switch_services", SwitchServicesInput, type(None))
SET_HEAD_SERVE_LABEL = ActivityRef("set_head_serve_label", HeadServeLabelInput, type(None))
RECONCILE_GATEWAY = ActivityRef("reconcile_gateway", GatewayInput, type(None))
READ_GATEWAY_STATUS = ActivityRef("read_gateway_status", ServiceObjectsInput, GatewayRouteStatus)
"""Read the Gateway's and the HTTPRoute's reported conditions."""
WRITE_SERVICE_STATUS = ActivityRef("write_rayservice_status", WriteServiceStatusInput, type(None))
SET_SERVICE_SUSPEND = ActivityRef("set_rayservice_suspend", SetServiceSuspendInput, type(None))
SET_SERVICE_FINALIZER = ActivityRef("set_rayservice_finalizer", SetFinalizerInput, type(None))
RECORD_ROLLBACK = ActivityRef("record_rollback_annotation", RollbackAnnotationInput, type(None))
