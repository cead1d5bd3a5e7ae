"""The head Service a cluster's dashboard is reached through, checked before it is followed.

A dashboard's address is never taken from a CR's status or spec: it is derived from the head
Service the cluster owns. Every call to a dashboard, and every `status.dashboardURL` written,
goes through `head_of`, which accepts a Service only when

* it is the cluster's own: its controller ownerReference carries the RayCluster's uid. A
  Service of the same name that someone created beforehand, or that another object owns, is
  not followed;
* it is not an alias: an `ExternalName` Service is a DNS CNAME to any name, so a call to
  `<svc>.<namespace>.svc` would land on another namespace's Ray while every name in the URL
  still names the cluster's own namespace (validation refuses such a spec; this refuses the
  Service itself, however it came to be);
* it has a port named `dashboard` (KubeRay's `FetchHeadServiceURL`).

Through the API server's proxy that is all: the API server proxies a Service only to its
endpoints that are pods of its namespace. Direct calls do not resolve the Service's name,
though: whoever may edit Services in the namespace could turn it into an alias between this
check and the call, and cluster DNS caches an alias for seconds after it is undone. They go
to the IP of the cluster's own head pod instead (`head_pod_ip`), the address the Service would
lead to, read from the pod's status, which only the kubelet writes. A pod on the host's
network is refused: its address is the node's, not the pod's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from activities.builders import names
from activities.dashboard.errors import DashboardError, DashboardUnavailable
from crds.constants import LABEL_CLUSTER, LABEL_NODE_TYPE, PORT_NAME_DASHBOARD
from crds.enums import RayNodeType
from crds.raycluster import RayCluster

JSON = dict[str, Any]
EXTERNAL_NAME = "ExternalName"
HEAD = RayNodeType.HEAD.value


class HeadServiceRefused(DashboardError):
    """The Service named as the cluster's head Service is not one the worker may call."""


@dataclass(frozen=True)
class HeadService:
    """A head Service that passed `head_of`: its name, namespace and dashboard port."""

    name: str
    namespace: str
    dashboard_port: int
    target_port: int
    """The head pod's port behind it (the Service port's numeric `targetPort`, else the port)."""

    def address(self, cluster_domain: str) -> str:
        """`<svc>.<ns>.svc.<domain>:<port>`, KubeRay's form of `status.dashboardURL`."""
        return f"{self.name}.{self.namespace}.svc.{cluster_domain}:{self.dashboard_port}"


def head_service_name(cluster: RayCluster) -> str:
    """The name of the cluster's head Service (its template's, or `<cluster>-head-svc`)."""
    return names.head_service_name(cluster.name, cluster.spec)


def head_of(service: JSON | None, cluster: RayCluster) -> HeadService:
    """The cluster's head Service as `service` shows it, once it passes every check.

    Args:
        service: The Service read under `head_service_name(cluster)` in the cluster's
            namespace; None when there is none.
        cluster: The RayCluster, as read (its uid is the owner to look for).

    Raises:
        DashboardUnavailable: There is no such Service (yet).
        HeadServiceRefused: It is not the cluster's own, is an alias, or has no dashboard port.
    """
    name = head_service_name(cluster)
    if service is None:
        raise DashboardUnavailable(
            f"the head Service {name} of RayCluster {cluster.name} does not exist"
        )
    problem = head_service_problem(service, cluster)
    if problem:
        raise HeadServiceRefused(f"not calling Service {name}: {problem}")
    port = _dashboard_port(service)
    assert port is not None  # no problem found means there is one
    return HeadService(
        name=name, namespace=cluster.namespace, dashboard_port=port[0], target_port=port[1]
    )


def head_service_problem(service: JSON, cluster: RayCluster) -> str | None:
    """Why `service` may not be called as the cluster's head Service; None when it may."""
    meta, spec = service.get("metadata") or {}, service.get("spec") or {}
    if meta.get("namespace") != cluster.namespace:
        return f"it is not in the cluster's namespace {cluster.namespace!r}"
    if not names.is_controlled_by(service, cluster):
        return f"it is not owned by RayCluster {cluster.name} (uid {cluster.metadata.uid})"
    if spec.get("type") == EXTERNAL_NAME or spec.get("externalName"):
        return "it is an ExternalName Service, a DNS alias that may lead anywhere"
    if _dashboard_port(service) is None:
        return f"it has no port named {PORT_NAME_DASHBOARD!r}"
    return None


def head_pod_ip(pods: Iterable[JSON], cluster: RayCluster) -> str:
    """The IP of the cluster's own head pod, for a direct call.

    Args:
        pods: Pods labelled with the cluster (from the worker's copy, or listed).
        cluster: The RayCluster, as read.

    Raises:
        DashboardUnavailable: No head pod of the cluster has an address yet.
        HeadServiceRefused: Its head pod is on the host's network (the node's address).
    """
    on_host = ""
    for pod in sorted(pods, key=lambda p: str(p["metadata"].get("name", ""))):
        meta, status = pod["metadata"], pod.get("status") or {}
        labels = meta.get("labels") or {}
        if labels.get(LABEL_CLUSTER) != cluster.name or labels.get(LABEL_NODE_TYPE) != HEAD:
            continue
        if meta.get("deletionTimestamp") or not names.is_controlled_by(pod, cluster):
            continue
        ip = status.get("podIP")
        if ip and ip == status.get("hostIP"):
            on_host = str(meta.get("name", ""))
        elif ip:
            return str(ip)
    if on_host:
        raise HeadServiceRefused(
            f"not calling head pod {on_host} directly: it is on the host's network, so its "
            "address is the node's; set KUBERAY_TEMPORAL_DASHBOARD_ACCESS=proxy for such clusters"
        )
    raise DashboardUnavailable(f"RayCluster {cluster.name} has no head pod with an address yet")


def _dashboard_port(service: JSON) -> tuple[int, int] | None:
    """(port, targetPort) of the Service's `dashboard` port; None without a usable one."""
    for port in (service.get("spec") or {}).get("ports") or []:
        if isinstance(port, dict) and port.get("name") == PORT_NAME_DASHBOARD:
            number, target = _port(port.get("port")), _port(port.get("targetPort"))
            return None if number is None else (number, target or number)
    return None


def _port(value: Any) -> int | None:
    """`value` when it is a port number (a named targetPort is not: the port stands for it)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536:
        return value
    return None
