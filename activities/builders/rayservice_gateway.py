"""The Gateway API objects of an incremental RayService upgrade (S13, S14).

KubeRay's `createGateway`, `createHTTPRoute` and `reconcilePerClusterServeService`: Gateway
`<rs>-gateway` (the configured class, one HTTP listener on port 80), HTTPRoute
`<rs>-httproute` sending `/` to each cluster's `<cluster>-serve-svc` by weight, and those
per-cluster Services, owned by their RayCluster. Pure, like the other builders; also reads
the weights and readiness back from the stored objects.
"""

from __future__ import annotations

from activities.builders import names
from activities.builders.cluster_services import MissingServePortError
from activities.builders.rayservice import (
    originated_labels,
    rayservice_owner_reference,
    serve_ports,
    serving_selector,
)
from activities.kube.vocabulary import GATEWAY_READY, ROUTE_PARENT_READY
from crds import constants as k
from crds.common import JSONObject
from crds.enums import ConditionStatus
from crds.raycluster import RayCluster
from crds.rayservice import RayService

GATEWAY_API = "gateway.networking.k8s.io/v1"
GATEWAY_LISTENER = "http"
GATEWAY_PORT = 80


def gateway_name(service_name: str) -> str:
    """`<rayservice>-gateway`."""
    return f"{service_name}-gateway"


def httproute_name(service_name: str) -> str:
    """`<rayservice>-httproute`."""
    return f"{service_name}-httproute"


def build_cluster_serve_service(service: RayService, cluster: RayCluster) -> JSONObject:
    """`<cluster>-serve-svc` for the HTTPRoute backends, owned by the RayCluster (S13)."""
    ports = serve_ports(cluster)
    if not ports:
        raise MissingServePortError("the Ray head container has no port named 'serve'")
    name = names.serve_service_name(cluster.name)
    labels = {**originated_labels(service), k.LABEL_SERVE: names.serve_service_label(cluster.name)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": service.namespace,
            "labels": labels,
            "ownerReferences": [names.owner_reference(cluster)],
        },
        "spec": {"selector": serving_selector(cluster.name), "ports": ports},
    }


def build_gateway(service: RayService) -> JSONObject:
    """Gateway `<rs>-gateway` of the configured class, one HTTP listener on port 80."""
    strategy = service.spec.upgrade_strategy
    options = strategy.cluster_upgrade_options if strategy else None
    return {
        "apiVersion": GATEWAY_API,
        "kind": "Gateway",
        "metadata": {
            "name": gateway_name(service.name),
            "namespace": service.namespace,
            "labels": originated_labels(service),
            "ownerReferences": [rayservice_owner_reference(service)],
        },
        "spec": {
            "gatewayClassName": (options.gateway_class_name if options else None) or "",
            "listeners": [
                {"name": GATEWAY_LISTENER, "protocol": "HTTP", "port": GATEWAY_PORT},
            ],
        },
    }


def build_httproute(service: RayService, weights: dict[str, int], port: int) -> JSONObject:
    """HTTPRoute `<rs>-httproute`: path prefix `/` to each cluster's serve Service by weight."""
    backends = [
        {
            "group": "",
            "kind": "Service",
            "name": names.serve_service_name(cluster),
            "namespace": service.namespace,
            "port": port,
            "weight": weight,
        }
        for cluster, weight in weights.items()
    ]
    return {
        "apiVersion": GATEWAY_API,
        "kind": "HTTPRoute",
        "metadata": {
            "name": httproute_name(service.name),
            "namespace": service.namespace,
            "labels": originated_labels(service),
            "ownerReferences": [rayservice_owner_reference(service)],
        },
        "spec": {
            "parentRefs": [{"name": gateway_name(service.name), "namespace": service.namespace}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": backends,
                }
            ],
        },
    }


def route_weights(route: JSONObject) -> dict[str, int]:
    """Backend weights by cluster name, read back from an HTTPRoute (S14)."""
    weights: dict[str, int] = {}
    suffix = "-serve-svc"
    for rule in (route.get("spec") or {}).get("rules") or []:
        for ref in rule.get("backendRefs") or []:
            name = str(ref.get("name") or "")
            if name.endswith(suffix):
                weights[name.removesuffix(suffix)] = int(ref.get("weight", 1))
    return weights


def _true(conditions: list[JSONObject] | None, kinds: tuple[str, ...]) -> bool:
    found = {c.get("type"): c.get("status") for c in conditions or []}
    return all(found.get(kind) == ConditionStatus.TRUE for kind in kinds)


def _reported(conditions: list[JSONObject] | None, generation: object) -> list[JSONObject]:
    """Conditions as `RouteCondition` fields; `current` False when older than `generation`."""
    out: list[JSONObject] = []
    for cond in conditions or []:
        observed = cond.get("observedGeneration")
        stale = isinstance(observed, int) and isinstance(generation, int) and observed < generation
        out.append(
            {
                "type": str(cond.get("type") or ""),
                "status": str(cond.get("status") or ""),
                "reason": str(cond.get("reason") or ""),
                "current": not stale,
            }
        )
    return out


def gateway_conditions(gateway: JSONObject | None) -> list[JSONObject]:
    """The conditions a controller reported on the Gateway (none when it is missing)."""
    if gateway is None:
        return []
    generation = (gateway.get("metadata") or {}).get("generation")
    return _reported((gateway.get("status") or {}).get("conditions"), generation)


def route_parent_conditions(
    route: JSONObject | None, gateway: str, namespace: str
) -> list[JSONObject]:
    """The conditions of the route's parent entry for Gateway `gateway` (as KubeRay matches it)."""
    if route is None:
        return []
    generation = (route.get("metadata") or {}).get("generation")
    for parent in (route.get("status") or {}).get("parents") or []:
        ref = parent.get("parentRef") or {}
        if ref.get("name") != gateway or ref.get("namespace", namespace) != namespace:
            continue
        return _reported(parent.get("conditions"), generation)
    return []


def gateway_ready(gateway: JSONObject | None, route: JSONObject | None) -> bool:
    """Gateway Accepted+Programmed and the route's parent Accepted+ResolvedRefs (S14)."""
    if gateway is None or route is None:
        return False
    if not _true((gateway.get("status") or {}).get("conditions"), GATEWAY_READY):
        return False
    parents = (route.get("status") or {}).get("parents") or []
    return any(_true(p.get("conditions"), ROUTE_PARENT_READY) for p in parents)
