"""The RayService activities on the Kubernetes API: snapshot, clusters, CR writes.

Every method may run twice: clusters are created under the name the workflow chose (a second
create finds it), deletes tolerate 404, Events are named after the activity attempt, and the
status is replaced as a whole. Manifests are built here from the CR just read, so the history
carries names and hashes, never the cluster template or the Serve config. The Services that
switch clusters, the Gateway and the dashboard calls live in `service_routes` and
`service_serve`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from temporalio import activity

from activities import events
from activities.builders import DEFAULT_OPTIONS, BuildOptions
from activities.builders import rayservice as rs
from activities.builders import rayservice_gateway as gw
from activities.builders.names import without_last_applied
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeNotFound
from activities.kube.patches import replacing_patch
from activities.kube.spans import stamp_trace_context
from activities.kube.vocabulary import EventType
from activities.rayservice import contract
from crds import constants as k
from crds.enums import ClusterState, ConditionStatus
from crds.enums import RayClusterConditionType as ClusterCond
from crds.enums import RayServiceUpgradeType as Upgrade
from crds.loading import parse_ray_object
from crds.raycluster import RayClusterStatus
from crds.rayservice import RayService
from crds.redaction import redacted_cluster_spec
from crds.refs import ObjectRef
from crds.validation import formats
from crds.validation.gates import gate_violations
from crds.violations import InvalidObjectError, Violation, reported


class ServiceStore:
    """Reads of a RayService and what it owns, shared by the RayService activity classes."""

    def __init__(self, client: KubeClient) -> None:
        self.kube = client

    async def load(self, ref: ObjectRef) -> tuple[kube.JSON, RayService] | None:
        """The stored object and its model; None if gone, replaced (uid) or unloadable."""
        obj = await self.kube.get_same(kube.RAYSERVICES, ref.namespace, ref.name, ref.uid)
        if obj is None:
            return None
        try:
            service = parse_ray_object(obj)
        except InvalidObjectError:
            return None
        assert isinstance(service, RayService)
        return obj, service

    async def clusters(self, ref: ObjectRef) -> list[kube.JSON]:
        """The RayClusters this RayService controls."""
        selector = (
            f"{k.LABEL_ORIGINATED_FROM_CR_NAME}={ref.name},{k.LABEL_ORIGINATED_FROM_CRD}=RayService"
        )
        found = await self.kube.list_all(kube.RAYCLUSTERS, ref.namespace, selector)
        return sorted(
            (c for c in found if rs.is_owned_by(c, ref.uid)), key=lambda c: c["metadata"]["name"]
        )

    async def owned_cluster(self, ref: ObjectRef, name: str) -> kube.JSON | None:
        """RayCluster `name`, if this RayService controls it."""
        obj = await self.kube.get_or_none(kube.RAYCLUSTERS, ref.namespace, name)
        return obj if obj is not None and rs.is_owned_by(obj, ref.uid) else None

    async def event(
        self, ref: ObjectRef, kind: EventType, reason: str, message: str, key: str
    ) -> None:
        """An Event on the RayService, once per activity attempt and key."""
        info = activity.info()
        await events.record(self.kube, ref, kind, reason, message, f"{info.workflow_run_id}/{key}")


class ServiceActivities:
    """RayService side effects on the Kubernetes API (not the dashboard, not the routes)."""

    def __init__(self, client: KubeClient, options: BuildOptions = DEFAULT_OPTIONS) -> None:
        self._kube = client
        self._store = ServiceStore(client)
        self._zero_downtime = options.zero_downtime
        self._gates = options.feature_gates

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration."""
        return [
            self.read,
            self.create_cluster,
            self.update_cluster,
            self.delete_cluster,
            self.write_status,
            self.set_suspend,
            self.set_finalizer,
            self.record_rollback,
        ]

    # --- the snapshot ---------------------------------------------------------------------

    @activity.defn(name=contract.READ_SERVICE.name)
    async def read(self, params: contract.ReadServiceInput) -> contract.ServiceSnapshot:
        """Read the RayService, its clusters, Services, endpoints and routes in one go."""
        ref = params.ref
        obj = await self._kube.get_same(kube.RAYSERVICES, ref.namespace, ref.name, ref.uid)
        if obj is None:
            return contract.ServiceSnapshot(exists=False)
        meta = obj["metadata"]
        snap = contract.ServiceSnapshot(
            zero_downtime=self._zero_downtime,
            generation=int(meta.get("generation") or 0),
            deleting=bool(meta.get("deletionTimestamp")),
            finalizers=list(meta.get("finalizers") or []),
            annotations=without_last_applied(meta.get("annotations")),
            labels=dict(meta.get("labels") or {}),
        )
        try:
            service = parse_ray_object(obj)
        except InvalidObjectError as err:
            snap.schema_violations = reported(err.violations)
            snap.clusters = [self._view(c, None) for c in await self._store.clusters(ref)]
            return snap
        assert isinstance(service, RayService)
        snap.gate_violations = reported(gate_violations(service, self._gates))
        text = service.spec.serve_config_v2
        if text:
            try:
                rs.parse_serve_config(text)
            except rs.ServeConfigError as err:
                # Named by its field path, like every other violation the workflow reports.
                snap.schema_violations.append(str(Violation("spec.serveConfigV2", str(err))))
        snap.goal_hash = rs.goal_hash(service.spec.ray_cluster_config)
        snap.serve_config_hash = rs.serve_config_hash(text)
        snap.clusters = [self._view(c, service) for c in await self._store.clusters(ref)]
        if params.clusters_only:
            return snap
        if params.known_generation != snap.generation:
            snap.spec = service.spec.model_copy(
                update={
                    "serve_config_v2": None,
                    "ray_cluster_config": redacted_cluster_spec(service.spec.ray_cluster_config),
                }
            )
        if params.known_generation is None:
            snap.status = service.status
        await self._observe_objects(service, snap)
        return snap

    def _view(self, obj: kube.JSON, service: RayService | None) -> contract.ClusterView:
        meta = obj["metadata"]
        annotations = meta.get("annotations") or {}
        groups = _worker_groups(annotations)
        prefix = ""
        goal = service.spec.ray_cluster_config if service is not None else None
        if goal is not None and groups is not None and len(goal.worker_group_specs or []) >= groups:
            prefix = rs.goal_hash(goal, worker_groups=groups)
        try:
            status = RayClusterStatus.model_validate(obj.get("status") or {})
        except ValueError:
            status = RayClusterStatus()
        head_ready = any(
            c.type == ClusterCond.HEAD_POD_READY and c.status == ConditionStatus.TRUE
            for c in status.conditions or []
        )
        return contract.ClusterView(
            name=meta["name"],
            spec_hash=annotations.get(k.ANNOTATION_HASH_WITHOUT_REPLICAS, ""),
            goal_prefix_hash=prefix,
            num_worker_groups=groups or 0,
            kuberay_version=annotations.get(k.ANNOTATION_KUBERAY_VERSION, ""),
            head_pod_ready=head_ready,
            head_pod_ip=(status.head.pod_ip if status.head else None) or "",
            ready=status.state == ClusterState.READY,
            deleting=bool(meta.get("deletionTimestamp")),
            status=status,
        )

    async def _observe_objects(self, service: RayService, snap: contract.ServiceSnapshot) -> None:
        ns, uid = service.namespace, service.metadata.uid or ""
        head_name, serve_name = rs.head_service_name(service), rs.serve_service_name(service)
        head = await self._kube.get_or_none(kube.SERVICES, ns, head_name)
        serve = await self._kube.get_or_none(kube.SERVICES, ns, serve_name)
        snap.head_service_cluster = rs.selected_cluster(head)
        snap.serve_service_cluster = rs.selected_cluster(serve)
        snap.serve_service = serve_name
        counted = [serve_name]
        incremental = _is_incremental(service)
        if incremental:
            counted += [f"{c.name}-serve-svc" for c in snap.clusters]
        for name in counted:
            selector = f"{rs.ENDPOINT_SLICE_SERVICE_LABEL}={name}"
            slices = await self._kube.list_all(kube.ENDPOINT_SLICES, ns, selector)
            snap.serve_endpoints[name] = rs.ready_endpoint_count(slices)
        owned = [("Service", head), ("Service", serve)]
        if incremental:
            # None also when the Gateway API CRDs are not installed (404 on the collection).
            gateway = await self._kube.get_or_none(kube.GATEWAYS, ns, gw.gateway_name(service.name))
            route = await self._kube.get_or_none(
                kube.HTTPROUTES, ns, gw.httproute_name(service.name)
            )

            snap.route_weights = gw.route_weights(route) if route is not None else None
            snap.gateway_ready = gw.gateway_ready(gateway, route)
            owned += [("Gateway", gateway), ("HTTPRoute", route)]
        snap.owned_objects = [
            f"{kind}/{obj['metadata']['name']}"
            for kind, obj in owned
            if obj is not None and rs.is_owned_by(obj, uid)
        ]

    # --- clusters ---------------------------------------------------------------------------

    @activity.defn(name=contract.CREATE_SERVICE_CLUSTER.name)
    async def create_cluster(
        self, params: contract.CreateServiceClusterInput
    ) -> contract.CreateServiceClusterResult:
        """Create the pending RayCluster from the current spec, unless the spec moved on."""
        ref = params.ref
        loaded = await self._store.load(ref)
        if loaded is None or loaded[0]["metadata"].get("deletionTimestamp"):
            return contract.CreateServiceClusterResult(stale=True)
        obj, service = loaded
        existing = await self._store.owned_cluster(ref, params.name)
        if existing is not None:
            return contract.CreateServiceClusterResult()  # a retry after the create went through
        if rs.goal_hash(service.spec.ray_cluster_config) != params.goal_hash:
            return contract.CreateServiceClusterResult(stale=True)
        manifest = rs.build_service_cluster(
            service,
            obj["spec"]["rayClusterConfig"],
            params.name,
            autoscale_from_min=params.autoscale_from_min,
        )
        # The cluster's own workflow then continues this trace (`activities.kube.spans`).
        stamp_trace_context(manifest)
        _, created = await self._kube.create_or_get(kube.RAYCLUSTERS, ref.namespace, manifest)
        if created:
            message = f"Created RayCluster {ref.namespace}/{params.name}"
            await self._store.event(
                ref, EventType.NORMAL, "CreatedRayCluster", message, params.name
            )
        return contract.CreateServiceClusterResult()

    @activity.defn(name=contract.UPDATE_SERVICE_CLUSTER.name)
    async def update_cluster(self, params: contract.ClusterNameInput) -> None:
        """Replace the cluster's spec with the goal, keeping its `suspend` (S11)."""
        ref = params.ref
        loaded = await self._store.load(ref)
        existing = await self._store.owned_cluster(ref, params.cluster)
        if loaded is None or existing is None:
            return
        obj, service = loaded
        updated = rs.updated_service_cluster(service, obj["spec"]["rayClusterConfig"], existing)
        if updated == existing:
            return
        # resourceVersion rides along: a concurrent write makes this attempt fail and retry.
        await self._kube.request(
            "PUT", kube.RAYCLUSTERS.path(ref.namespace, params.cluster), body=updated
        )
        message = f"Updated RayCluster {ref.namespace}/{params.cluster}: {params.reason}"
        version = existing["metadata"].get("resourceVersion", "")
        await self._store.event(
            ref, EventType.NORMAL, "UpdatedRayCluster", message, f"{params.cluster}/{version}"
        )

    @activity.defn(name=contract.DELETE_SERVICE_CLUSTER.name)
    async def delete_cluster(self, params: contract.ClusterNameInput) -> None:
        """Delete one of the RayService's clusters (background propagation, 404 is done)."""
        ref = params.ref
        if await self._store.owned_cluster(ref, params.cluster) is None:
            return
        if await self._kube.delete(kube.RAYCLUSTERS, ref.namespace, params.cluster):
            message = f"Deleted RayCluster {ref.namespace}/{params.cluster}: {params.reason}"
            await self._store.event(
                ref, EventType.NORMAL, "DeletedRayCluster", message, params.cluster
            )

    # --- the CR itself ------------------------------------------------------------------------

    @activity.defn(name=contract.WRITE_SERVICE_STATUS.name)
    async def write_status(self, params: contract.WriteServiceStatusInput) -> None:
        """Replace the status subresource (fields the new status lacks are removed)."""
        ref = params.ref
        current = await self._kube.get_same(kube.RAYSERVICES, ref.namespace, ref.name, ref.uid)
        if current is None:
            return
        new = params.status.to_json_dict()
        # Go's omitempty: KubeRay writes no empty serviceStatus and no zero numServeEndpoints.
        for key, empty in (("serviceStatus", ""), ("numServeEndpoints", 0)):
            if key in new and new[key] == empty:
                del new[key]
        patch = replacing_patch(current.get("status") or {}, new)
        await self._patch(ref, {"status": patch}, sub="status")

    @activity.defn(name=contract.SET_SERVICE_SUSPEND.name)
    async def set_suspend(self, params: contract.SetServiceSuspendInput) -> None:
        """Write `spec.suspend` (a person's suspend or resume)."""
        await self._patch(params.ref, {"spec": {"suspend": params.suspend}})

    @activity.defn(name=contract.SET_SERVICE_FINALIZER.name)
    async def set_finalizer(self, params: contract.SetFinalizerInput) -> None:
        """Add or remove `ray.io/rayservice-finalizer`, leaving other finalizers alone."""
        ref = params.ref
        current = await self._kube.get_same(kube.RAYSERVICES, ref.namespace, ref.name, ref.uid)
        if current is None:
            return
        meta = current["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f != k.FINALIZER_RAYSERVICE]
        if params.present:
            finalizers.append(k.FINALIZER_RAYSERVICE)
        if finalizers == list(meta.get("finalizers") or []):
            return
        # The list is replaced whole; the resourceVersion makes a concurrent edit a conflict.
        patch = {
            "metadata": {
                "finalizers": finalizers or None,
                "resourceVersion": meta.get("resourceVersion"),
            }
        }
        await self._patch(ref, patch)

    @activity.defn(name=contract.RECORD_ROLLBACK.name)
    async def record_rollback(self, params: contract.RollbackAnnotationInput) -> None:
        """Write `ray.io/rollback-requested`: the rolled-back goal hash survives restarts."""
        patch = {"metadata": {"annotations": {k.ANNOTATION_ROLLBACK_REQUESTED: params.goal_hash}}}
        await self._patch(params.ref, patch)

    async def _patch(self, ref: ObjectRef, patch: kube.JSON, sub: str = "") -> None:
        with contextlib.suppress(KubeNotFound):  # the CR is gone: nothing left to write
            await self._kube.patch(kube.RAYSERVICES, ref.namespace, ref.name, patch, sub=sub)


def _is_incremental(service: RayService) -> bool:
    strategy = service.spec.upgrade_strategy
    return bool(strategy and strategy.type == Upgrade.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE)


def _worker_groups(annotations: dict[str, str]) -> int | None:
    """`ray.io/num-worker-groups`, read as Go's Atoi reads it; None if unreadable or negative.

    We write it, but anyone who can edit the RayCluster can change it: `int()` would raise on
    "two" or "²" and fail every read of the RayService. KubeRay's Atoi error makes it update
    the cluster in place; here such a count matches no prefix of the goal.
    """
    groups = formats.parse_go_int(annotations.get(k.ANNOTATION_NUM_WORKER_GROUPS) or "0")
    return groups if groups is not None and groups >= 0 else None
