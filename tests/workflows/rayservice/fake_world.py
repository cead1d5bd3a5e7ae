"""An in-memory RayService world standing in for Kubernetes and the Ray dashboards.

A test double at the activity boundary for the time-skipping workflow tests only: it keeps
the RayService CR (generation, annotations, finalizers, status), the RayClusters the workflow
creates (not ready until the test flips them, unless `auto_ready`), each cluster's Serve
applications, the Services' selectors, and the HTTPRoute weights with the (skipped) time at
which each was set.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.dashboard.contract import ServeStatus
from activities.rayservice import contract
from crds.feature_gates import FeatureGates
from crds.rayservice import RayService, RayServiceSpec, RayServiceStatuses
from crds.validation.gates import gate_violations
from crds.violations import reported


def _hash(value: object) -> str:
    return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


@dataclass
class FakeRayCluster:
    name: str
    config: dict[str, Any]
    head_ready: bool = False
    apps: dict[str, str] = field(default_factory=dict)
    applied: list[tuple[str, int | None]] = field(default_factory=list)

    @property
    def spec_hash(self) -> str:
        return _hash({k: v for k, v in self.config.items() if k != "suspend"})


READY_GATEWAY = contract.GatewayRouteStatus(
    gateway=[
        contract.RouteCondition(type="Accepted", status="True"),
        contract.RouteCondition(type="Programmed", status="True"),
    ],
    route=[
        contract.RouteCondition(type="Accepted", status="True"),
        contract.RouteCondition(type="ResolvedRefs", status="True"),
    ],
)
"""A Gateway controller's report once the Gateway and the route are taken up."""


class FakeServiceWorld:
    """One RayService and everything it owns."""

    def __init__(self, name: str, spec: dict[str, Any], auto_ready: bool = True) -> None:
        self.name = name
        self.spec = copy.deepcopy(spec)
        self.generation = 1
        self.annotations: dict[str, str] = {}
        self.exists = True
        self.deleted_at: datetime | None = None
        self.finalizers: list[str] = []
        self.status: RayServiceStatuses | None = None
        self.written: list[RayServiceStatuses] = []
        self.events: list[contract.EventSpec] = []
        self.clusters: dict[str, FakeRayCluster] = {}
        self.created: list[str] = []
        self.deleted: list[tuple[str, datetime]] = []
        self.head_svc: str | None = None
        self.serve_svc: str | None = None
        self.routes: list[tuple[datetime, dict[str, int]]] = []
        self.auto_ready = auto_ready
        self.failing_waits = 0
        """How many `wait_serve_healthy` attempts fail next, as when the worker running one dies."""
        self.gateway_api = True
        self.gateway_status = READY_GATEWAY
        """What a Gateway controller reports (all ready, unless a test says otherwise)."""
        self.gateway_reads = 0
        self.report_refs = False
        """True: report the route's ResolvedRefs as a controller would (see `gateway`)."""
        self.backend_services: set[str] = set()
        self.zero_downtime = True
        self.gates = FeatureGates()
        """ENABLE_ZERO_DOWNTIME as the read reports it (the real read: the worker settings)."""
        """False: the Gateway API CRDs are not installed (as `reconcile_gateway` reports it)."""

    # --- what tests do -------------------------------------------------------------------------

    def edit(self, **fields: Any) -> None:
        self.spec.update(copy.deepcopy(fields))
        self.generation += 1

    def edit_cluster(self, **fields: Any) -> None:
        self.edit(rayClusterConfig={**self.spec["rayClusterConfig"], **fields})

    def flip_ready(self, name: str) -> None:
        cluster = self.clusters[name]
        cluster.head_ready = True
        cluster.apps = {app: "RUNNING" for app in cluster.apps}

    def serving(self) -> str | None:
        return self.serve_svc if self.serve_svc == self.head_svc else None

    def condition(
        self, kind: str, status: RayServiceStatuses | None = None
    ) -> tuple[str, str] | None:
        status = status or self.status
        for cond in (status.conditions or []) if status else []:
            if cond.type == kind:
                return cond.status, cond.reason
        return None

    def active(self) -> str | None:
        side = self.status.active_service_status if self.status else None
        return side.ray_cluster_name if side else None

    # --- the activities ------------------------------------------------------------------------

    def activities(self) -> list[Any]:
        return [
            self.read, self.create_cluster, self.update_cluster, self.delete_cluster,
            self.delete_objects, self.apply_serve, self.read_serve, self.wait_healthy,
            self.switch, self.serve_label, self.gateway, self.read_gateway_status,
            self.write_status, self.set_suspend,
            self.set_finalizer, self.record_rollback, self.record_event,
        ]  # fmt: skip

    def _goal(self) -> dict[str, Any]:
        return {k: v for k, v in self.spec["rayClusterConfig"].items() if k != "suspend"}

    def _app_names(self) -> list[str]:
        config = self.spec.get("serveConfigV2") or ""
        return [line.split(":", 1)[1].strip() for line in config.splitlines() if "name:" in line]

    def _view(self, cluster: FakeRayCluster) -> contract.ClusterView:
        groups = cluster.config.get("workerGroupSpecs", [])
        goal = self._goal()
        prefix = {**goal, "workerGroupSpecs": goal.get("workerGroupSpecs", [])[: len(groups)]}
        enough = len(goal.get("workerGroupSpecs", [])) >= len(groups)
        return contract.ClusterView(
            name=cluster.name,
            spec_hash=cluster.spec_hash,
            goal_prefix_hash=_hash(prefix) if enough else "",
            num_worker_groups=len(groups),
            kuberay_version="v1.7.0",
            head_pod_ready=cluster.head_ready,
            ready=cluster.head_ready,
        )

    def _running(self, name: str | None) -> bool:
        cluster = self.clusters.get(name or "")
        return bool(cluster and cluster.apps and all(s == "RUNNING" for s in cluster.apps.values()))

    @activity.defn(name=contract.READ_SERVICE.name)
    async def read(self, params: contract.ReadServiceInput) -> contract.ServiceSnapshot:
        if not self.exists:
            return contract.ServiceSnapshot(exists=False)
        spec = RayServiceSpec.model_validate({**self.spec, "serveConfigV2": None})
        light = params.clusters_only or params.known_generation == self.generation
        endpoints = {f"{self.name}-serve-svc": 2 if self._running(self.serve_svc) else 0}
        endpoints |= {f"{n}-serve-svc": 1 for n in self.clusters if self._running(n)}
        config = self.spec.get("serveConfigV2") or ""
        owned = [f"Service/{self.name}-serve-svc"] if self.serve_svc else []
        return contract.ServiceSnapshot(
            zero_downtime=self.zero_downtime,
            generation=self.generation,
            deleting=self.deleted_at is not None,
            finalizers=list(self.finalizers),
            annotations=dict(self.annotations),
            spec=None if light else spec,
            gate_violations=reported(gate_violations(RayService(spec=spec), self.gates)),
            status=self.status if params.known_generation is None else None,
            goal_hash=_hash(self._goal()),
            serve_config_hash=hashlib.sha256(config.encode()).hexdigest() if config else "",
            clusters=[self._view(c) for c in self.clusters.values()],
            head_service_cluster=self.head_svc,
            serve_service_cluster=self.serve_svc,
            serve_endpoints=endpoints,
            route_weights=self.routes[-1][1] if self.routes else None,
            gateway_ready=bool(self.routes),
            owned_objects=owned,
        )

    @activity.defn(name=contract.CREATE_SERVICE_CLUSTER.name)
    async def create_cluster(
        self, params: contract.CreateServiceClusterInput
    ) -> contract.CreateServiceClusterResult:
        if params.goal_hash != _hash(self._goal()):
            return contract.CreateServiceClusterResult(stale=True)
        if params.name not in self.clusters:
            self.clusters[params.name] = FakeRayCluster(
                params.name, copy.deepcopy(self.spec["rayClusterConfig"]), self.auto_ready
            )
            self.created.append(params.name)
        return contract.CreateServiceClusterResult()

    @activity.defn(name=contract.UPDATE_SERVICE_CLUSTER.name)
    async def update_cluster(self, params: contract.ClusterNameInput) -> None:
        self.clusters[params.cluster].config = copy.deepcopy(self.spec["rayClusterConfig"])

    @activity.defn(name=contract.DELETE_SERVICE_CLUSTER.name)
    async def delete_cluster(self, params: contract.ClusterNameInput) -> None:
        if self.clusters.pop(params.cluster, None) is not None:
            self.deleted.append((params.cluster, activity.info().current_attempt_scheduled_time))

    @activity.defn(name=contract.DELETE_SERVICE_OBJECTS.name)
    async def delete_objects(self, params: contract.ServiceObjectsInput) -> None:
        self.head_svc = self.serve_svc = None

    @activity.defn(name=contract.APPLY_SERVE_CONFIG.name)
    async def apply_serve(
        self, params: contract.ApplyServeConfigInput
    ) -> contract.ApplyServeConfigResult:
        cluster = self.clusters[params.cluster]
        if params.keep_deployed and cluster.applied:  # as the activity: what it runs goes back
            cluster.applied.append((cluster.applied[-1][0], params.target_capacity))
            return contract.ApplyServeConfigResult(config_hash="")
        config = self.spec.get("serveConfigV2") or ""
        cluster.applied.append((config, params.target_capacity))
        state = "RUNNING" if self.auto_ready else "DEPLOYING"
        cluster.apps = {app: cluster.apps.get(app, state) for app in self._app_names()}
        return contract.ApplyServeConfigResult(
            config_hash=hashlib.sha256(config.encode()).hexdigest()
        )

    def _serve(self, name: str) -> ServeStatus:
        apps = self.clusters[name].apps if name in self.clusters else {}
        return ServeStatus.model_validate(
            {"applications": {a: {"status": s, "deployments": {}} for a, s in apps.items()}}
        )

    @activity.defn(name=contract.READ_SERVE_STATUS.name)
    async def read_serve(self, params: contract.ReadServeStatusInput) -> ServeStatus:
        return self._serve(params.cluster)

    @activity.defn(name=contract.WAIT_SERVE_HEALTHY.name)
    async def wait_healthy(self, params: contract.WaitServeHealthyInput) -> contract.ServeHealth:
        if self.failing_waits > 0:
            self.failing_waits -= 1
            raise RuntimeError("worker lost while waiting (heartbeat timeout)")
        healthy = self._running(params.cluster)
        return contract.ServeHealth(
            healthy=healthy,
            consecutive_healthy=params.consecutive if healthy else 0,
            status=self._serve(params.cluster),
        )

    @activity.defn(name=contract.SWITCH_SERVICES.name)
    async def switch(self, params: contract.SwitchServicesInput) -> None:
        self.head_svc = self.serve_svc = params.cluster

    @activity.defn(name=contract.SET_HEAD_SERVE_LABEL.name)
    async def serve_label(self, params: contract.HeadServeLabelInput) -> None:
        return None

    @activity.defn(name=contract.RECONCILE_GATEWAY.name)
    async def gateway(self, params: contract.GatewayInput) -> None:
        if not self.gateway_api:
            message = "The Gateway API CRDs are not installed: no Gateway or HTTPRoute"
            raise ApplicationError(message, type=contract.GATEWAY_API_MISSING, non_retryable=True)
        # As the activity: a cluster's `<cluster>-serve-svc` is made only once the cluster exists.
        self.backend_services |= {name for name in params.weights if name in self.clusters}
        at = activity.info().current_attempt_scheduled_time
        if not self.routes or self.routes[-1][1] != params.weights:
            self.routes.append((at, dict(params.weights)))

    @activity.defn(name=contract.READ_GATEWAY_STATUS.name)
    async def read_gateway_status(
        self, params: contract.ServiceObjectsInput
    ) -> contract.GatewayRouteStatus:
        self.gateway_reads += 1
        if not self.report_refs or not self.routes:
            return self.gateway_status
        resolved = set(self.routes[-1][1]) <= self.backend_services
        refs = contract.RouteCondition(type="ResolvedRefs", status=str(resolved))
        accepted = contract.RouteCondition(type="Accepted", status="True")
        return self.gateway_status.model_copy(update={"route": [accepted, refs]})

    @activity.defn(name=contract.WRITE_SERVICE_STATUS.name)
    async def write_status(self, params: contract.WriteServiceStatusInput) -> None:
        self.status = params.status
        self.written.append(params.status)

    @activity.defn(name=contract.SET_SERVICE_SUSPEND.name)
    async def set_suspend(self, params: contract.SetServiceSuspendInput) -> None:
        if bool(self.spec.get("suspend")) != params.suspend:
            self.edit(suspend=params.suspend)

    @activity.defn(name=contract.SET_SERVICE_FINALIZER.name)
    async def set_finalizer(self, params: contract.SetFinalizerInput) -> None:
        if params.present and not self.finalizers:
            self.finalizers.append("ray.io/rayservice-finalizer")
        elif not params.present:
            self.finalizers = []
            if self.deleted_at is not None:
                self.exists = False

    @activity.defn(name=contract.RECORD_ROLLBACK.name)
    async def record_rollback(self, params: contract.RollbackAnnotationInput) -> None:
        self.annotations["ray.io/rollback-requested"] = params.goal_hash

    @activity.defn(name=contract.RECORD_EVENT.name)
    async def record_event(self, params: contract.RecordEventInput) -> None:
        self.events.append(params.event)
