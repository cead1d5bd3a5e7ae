"""Which pods back a Service, on which ports: the rules both endpoint controllers share.

kube-controller-manager's EndpointSlice and Endpoints controllers select pods by the Service's
selector, skip finished pods and pods without an IP, resolve each Service port's `targetPort`
(a number, or the name of a container port, which may differ from pod to pod), and derive an
endpoint's `ready`/`serving`/`terminating` conditions from the pod's Ready condition, its
deletion and `publishNotReadyAddresses`. Everything here is pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devcluster.selectors import label_map_matches

JsonObject = dict[str, Any]
Ports = tuple[tuple[str, int, str, str], ...]  # name, port, protocol, appProtocol


@dataclass(frozen=True)
class Backend:
    """One pod behind a Service, with the ports it serves the Service's ports on."""

    pod: JsonObject
    ports: Ports
    ready: bool
    serving: bool
    terminating: bool

    @property
    def ip(self) -> str:
        """The pod IP."""
        return str(self.pod["status"]["podIP"])

    def target_ref(self) -> JsonObject:
        """The reference to the pod that endpoints carry."""
        meta = self.pod["metadata"]
        return {
            "kind": "Pod",
            "namespace": meta.get("namespace", ""),
            "name": meta["name"],
            "uid": meta.get("uid", ""),
        }

    def hostname(self, service: JsonObject) -> str | None:
        """The endpoint hostname: the pod's, if its subdomain is this Service."""
        spec = self.pod.get("spec") or {}
        if spec.get("hostname") and spec.get("subdomain") == service["metadata"]["name"]:
            return str(spec["hostname"])
        return None


def selects(service: JsonObject, pod: JsonObject) -> bool:
    """Return whether a Service with a selector selects this pod (same namespace)."""
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return False
    same_namespace = pod["metadata"].get("namespace") == service["metadata"].get("namespace")
    return same_namespace and label_map_matches(selector, pod["metadata"].get("labels") or {})


def pod_ready(pod: JsonObject) -> bool:
    """Return whether the kubelet reports the pod Ready."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def container_port(pod: JsonObject, name: str) -> int | None:
    """Return the number of the pod's container port with this name."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == name:
                return int(port["containerPort"])
    return None


def resolve_port(service_port: JsonObject, pod: JsonObject) -> int | None:
    """Return the pod port a Service port targets, or None if the pod has no such port."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    return container_port(pod, str(target))


def pod_ports(service: JsonObject, pod: JsonObject) -> Ports:
    """Return the Service's ports as this pod serves them, skipping ports it lacks."""
    out = []
    for port in (service.get("spec") or {}).get("ports") or []:
        number = resolve_port(port, pod)
        if number is not None:
            protocol = port.get("protocol", "TCP")
            out.append((port.get("name", ""), number, protocol, port.get("appProtocol", "")))
    return tuple(out)


def backends(service: JsonObject, pods: list[JsonObject]) -> list[Backend]:
    """Return the pods a Service's endpoints list, sorted by IP, with their conditions."""
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    out = []
    for pod in pods:
        status = pod.get("status") or {}
        if not selects(service, pod) or status.get("phase") in ("Succeeded", "Failed"):
            continue
        if not status.get("podIP"):
            continue
        serving = publish or pod_ready(pod)
        terminating = bool(pod["metadata"].get("deletionTimestamp"))
        ready = publish or (serving and not terminating)
        out.append(Backend(pod, pod_ports(service, pod), ready, serving, terminating))
    return sorted(out, key=lambda b: (b.ip, b.pod["metadata"]["name"]))
