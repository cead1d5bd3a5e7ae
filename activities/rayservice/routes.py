"""Where a RayService's traffic goes: its head and serve Services, its Gateway and HTTPRoute.

`switch_services` points `<rs>-head-svc` and `<rs>-serve-svc` at one cluster by rewriting
their `ray.io/cluster` selector in place (the ClusterIP stays, so clients keep their
address). Before it does, it labels that cluster's head `ray.io/serve` from its Serve proxy
health: the serve selector also asks for `ray.io/serve=true`, and a head still labelled
"false" would leave the Service without endpoints for a moment, which is a failed request
under load. The EndpointSlice of a Service then changes in one write, from the old cluster's
pods to the new one's.

`reconcile_gateway` keeps the incremental upgrade's Gateway and HTTPRoute (S13, S14), with a
`<cluster>-serve-svc` per backend cluster, owned by that RayCluster; it labels the head of
every cluster it gives weight to first, for the same reason. Where the Gateway API CRDs are not
installed, KubeRay's reconcile fails on every pass with nothing but a log line; here a Warning
Event says what is missing and the activity fails for good (`GATEWAY_API_MISSING`), so the
workflow can say so in the status instead of retrying in silence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.builders import DEFAULT_OPTIONS, BuildOptions
from activities.builders import rayservice as rs
from activities.builders import rayservice_gateway as gw
from activities.builders.cluster_services import MissingServePortError
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeNotFound
from activities.kube.vocabulary import EventType
from activities.rayservice import contract
from activities.rayservice.kube_effects import ServiceStore
from activities.rayservice.ray_effects import HeadLabeler
from crds import constants as k
from crds.raycluster import RayCluster
from crds.rayservice import RayService
from crds.refs import ObjectRef


class RouteActivities:
    """The RayService's own Services and Gateway API objects."""

    def __init__(
        self, client: KubeClient, labeler: HeadLabeler, options: BuildOptions = DEFAULT_OPTIONS
    ) -> None:
        self._kube = client
        self._store = ServiceStore(client)
        self._labeler = labeler
        self._options = options

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration."""
        return [
            self.switch_services,
            self.delete_service_objects,
            self.reconcile_gateway,
            self.read_gateway_status,
        ]

    @activity.defn(name=contract.SWITCH_SERVICES.name)
    async def switch_services(self, params: contract.SwitchServicesInput) -> None:
        """Create or re-point `<rs>-head-svc` and `<rs>-serve-svc` at `cluster` (S8)."""
        ref = params.ref
        loaded = await self._store.load(ref)
        target = await self._store.owned_cluster(ref, params.cluster)
        if loaded is None or target is None or loaded[0]["metadata"].get("deletionTimestamp"):
            activity.logger.warning("not switching to %s: it or its RayService is gone", ref)
            return
        service = loaded[1]
        cluster = RayCluster.model_validate(target)
        exclude = bool(service.spec.exclude_head_pod_from_serve_svc)
        await self._labeler.label(ref, cluster.name, exclude)
        wanted = [rs.build_rayservice_head_service(service, cluster, self._options)]
        try:
            wanted.append(rs.build_rayservice_serve_service(service, cluster))
        except MissingServePortError as err:
            await self._store.event(
                ref, EventType.WARNING, "FailedToCreateServeService", str(err), "port"
            )
        for manifest in wanted:
            await self._ensure(ref, manifest, cluster.name)

    async def _ensure(self, ref: ObjectRef, manifest: kube.JSON, cluster: str) -> None:
        name = manifest["metadata"]["name"]
        existing, created = await self._kube.create_or_get(kube.SERVICES, ref.namespace, manifest)
        if created:
            message = f"Created Service {ref.namespace}/{name} for RayCluster {cluster}"
            await self._store.event(ref, EventType.NORMAL, "CreatedService", message, name)
            return
        if not rs.is_owned_by(existing, ref.uid):
            message = f"Service {ref.namespace}/{name} exists and is not owned by this RayService"
            await self._store.event(ref, EventType.WARNING, "ServiceNameCollision", message, name)
            return
        updated = rs.switched(existing, manifest)
        if updated is None:
            return
        await self._kube.request("PUT", kube.SERVICES.path(ref.namespace, name), body=updated)
        message = f"Updated Service {ref.namespace}/{name} to point at RayCluster {cluster}"
        await self._store.event(
            ref, EventType.NORMAL, "UpdatedService", message, f"{name}/{cluster}"
        )

    @activity.defn(name=contract.DELETE_SERVICE_OBJECTS.name)
    async def delete_service_objects(self, params: contract.ServiceObjectsInput) -> None:
        """Delete the RayService's Services, Gateway and HTTPRoute (suspend, S19)."""
        ref = params.ref
        loaded = await self._store.load(ref)
        if loaded is None:
            return  # garbage collection takes what a deleted RayService owned
        service, ns = loaded[1], ref.namespace
        # Each kind is spelled out at its call site: the RBAC scan reads resources from there.
        for name in (rs.head_service_name(service), rs.serve_service_name(service)):
            found = await self._kube.get_or_none(kube.SERVICES, ns, name)
            if self._ours(ref, found) and await self._kube.delete(kube.SERVICES, ns, name):
                await self._deleted(ref, "Service", name)
        name = gw.httproute_name(service.name)
        found = await self._kube.get_or_none(kube.HTTPROUTES, ns, name)
        if self._ours(ref, found) and await self._kube.delete(kube.HTTPROUTES, ns, name):
            await self._deleted(ref, "HTTPRoute", name)
        name = gw.gateway_name(service.name)
        found = await self._kube.get_or_none(kube.GATEWAYS, ns, name)
        if self._ours(ref, found) and await self._kube.delete(kube.GATEWAYS, ns, name):
            await self._deleted(ref, "Gateway", name)

    @staticmethod
    def _ours(ref: ObjectRef, found: kube.JSON | None) -> bool:
        return found is not None and rs.is_owned_by(found, ref.uid)

    async def _deleted(self, ref: ObjectRef, kind: str, name: str) -> None:
        message = f"Deleted {kind} {ref.namespace}/{name}"
        await self._store.event(ref, EventType.NORMAL, f"Deleted{kind}", message, name)

    @activity.defn(name=contract.RECONCILE_GATEWAY.name)
    async def reconcile_gateway(self, params: contract.GatewayInput) -> None:
        """Ensure the per-cluster serve Services, the Gateway and the route's weights."""
        ref = params.ref
        loaded = await self._store.load(ref)
        if loaded is None or loaded[0]["metadata"].get("deletionTimestamp"):
            return
        service = loaded[1]
        exclude = bool(service.spec.exclude_head_pod_from_serve_svc)
        port = k.PORT_SERVING
        for name, weight in params.weights.items():
            obj = await self._store.owned_cluster(ref, name)
            if obj is None:
                continue
            if weight > 0:  # as for the switch: the head serves before traffic goes to it
                await self._labeler.label(ref, name, exclude)
            cluster = RayCluster.model_validate(obj)
            port = rs.serve_port(cluster)
            per_cluster = gw.build_cluster_serve_service(service, cluster)
            _, created = await self._kube.create_or_get(kube.SERVICES, ref.namespace, per_cluster)
            if created:
                svc = per_cluster["metadata"]["name"]
                message = f"Created Service {ref.namespace}/{svc} for RayCluster {name}"
                await self._store.event(ref, EventType.NORMAL, "CreatedService", message, svc)
        ns = ref.namespace
        gateway = gw.build_gateway(service)
        try:
            existing, created = await self._kube.create_or_get(kube.GATEWAYS, ns, gateway)
        except KubeNotFound:
            await self._gateway_api_missing(ref, service, "Gateway")
            raise
        if (updated := await self._spec_update(ref, gateway, existing, created)) is not None:
            name = gateway["metadata"]["name"]
            await self._kube.request("PUT", kube.GATEWAYS.path(ns, name), body=updated)
        route = gw.build_httproute(service, params.weights, port)
        try:
            existing, created = await self._kube.create_or_get(kube.HTTPROUTES, ns, route)
        except KubeNotFound:
            await self._gateway_api_missing(ref, service, "HTTPRoute")
            raise
        if (updated := await self._spec_update(ref, route, existing, created)) is not None:
            name = route["metadata"]["name"]
            await self._kube.request("PUT", kube.HTTPROUTES.path(ns, name), body=updated)

    @activity.defn(name=contract.READ_GATEWAY_STATUS.name)
    async def read_gateway_status(
        self, params: contract.ServiceObjectsInput
    ) -> contract.GatewayRouteStatus:
        """The conditions reported on the Gateway and on the route's parent entry for it."""
        ref, ns = params.ref, params.ref.namespace
        name = gw.gateway_name(ref.name)
        # None also when the Gateway API CRDs are not installed (404 on the collection).
        gateway = await self._kube.get_or_none(kube.GATEWAYS, ns, name)
        route = await self._kube.get_or_none(kube.HTTPROUTES, ns, gw.httproute_name(ref.name))
        return contract.GatewayRouteStatus.model_validate(
            {
                "gateway": gw.gateway_conditions(gateway),
                "route": gw.route_parent_conditions(route, name, ns),
            }
        )

    async def _gateway_api_missing(self, ref: ObjectRef, service: RayService, kind: str) -> None:
        """A 404 on creating a Gateway API object: the API server does not serve its kind.

        The namespace exists (the RayService is in it), so the collection itself is missing:
        the CRDs are not installed. A Warning Event says so, and the activity fails for good.
        """
        api = gw.GATEWAY_API
        strategy = service.spec.upgrade_strategy
        options = strategy.cluster_upgrade_options if strategy else None
        gateway_class = (options.gateway_class_name if options else None) or ""
        message = (
            f"The Gateway API CRDs are not installed: the API server serves no {kind} ({api}), "
            f"which upgradeStrategy NewClusterWithIncrementalUpgrade needs. Install the Gateway "
            f"API CRDs and a Gateway controller for gatewayClassName {gateway_class!r}."
        )
        # KubeRay's reason for a failed create; the same key makes a repeat no new Event.
        await self._store.event(
            ref, EventType.WARNING, f"FailedToCreate{kind}", message, "gateway-api"
        )
        raise ApplicationError(message, type=contract.GATEWAY_API_MISSING, non_retryable=True)

    async def _spec_update(
        self, ref: ObjectRef, manifest: kube.JSON, existing: kube.JSON, created: bool
    ) -> kube.JSON | None:
        """`existing` with the wanted spec when it differs and is ours; Events on creation."""
        name, kind = manifest["metadata"]["name"], manifest["kind"]
        if created:
            message = f"Created {kind} {ref.namespace}/{name}"
            await self._store.event(ref, EventType.NORMAL, f"Created{kind}", message, name)
            return None
        if existing.get("spec") == manifest["spec"] or not rs.is_owned_by(existing, ref.uid):
            return None
        return {**existing, "spec": manifest["spec"]}
