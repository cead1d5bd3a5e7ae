"""The EndpointSlice and Endpoints controllers: a Service's ready pods, kept in step.

kube-proxy, DNS and anything that lists endpoints read these objects; here the ClusterIP
proxy, the hosts file and the `/proxy` subresource do. For every Service with a selector this
keeps one EndpointSlice (discovery.k8s.io/v1) per distinct port set, labelled
`kubernetes.io/service-name` and owned by the Service, and one Endpoints (core/v1) object of
the Service's name, as kube-controller-manager does. A Service with no backends keeps one
empty slice. Services without a selector are left alone: their endpoints are the user's.

`slices` and `endpoints` are pure and table-tested; `EndpointsController` applies them.
"""

from __future__ import annotations

import collections
import copy
from collections.abc import Iterable
from typing import Any

from devcluster.controllers import reconciling
from devcluster.controllers.reconciling import Key
from devcluster.handler import Handler, WriteOptions
from devcluster.networking.backends import Backend, Ports, backends, selects
from devcluster.store import PODS, Event, ObjectView

JsonObject = dict[str, Any]
Pair = tuple[str, str, str]
"""A namespace and one label pair of a selector."""
SERVICES = "/services"
SLICES = "discovery.k8s.io/endpointslices"
ENDPOINTS = "/endpoints"
SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER = "endpointslice-controller.k8s.io"


def _port_list(ports: Ports | None) -> list[JsonObject] | None:
    if ports is None:
        return None
    out = []
    for name, number, protocol, app_protocol in ports:
        port: JsonObject = {"name": name, "port": number, "protocol": protocol}
        if app_protocol:
            port["appProtocol"] = app_protocol
        out.append(port)
    return out


def _slice_endpoint(service: JsonObject, backend: Backend) -> JsonObject:
    endpoint: JsonObject = {
        "addresses": [backend.ip],
        "conditions": {
            "ready": backend.ready,
            "serving": backend.serving,
            "terminating": backend.terminating,
        },
        "targetRef": backend.target_ref(),
    }
    if hostname := backend.hostname(service):
        endpoint["hostname"] = hostname
    if node := (backend.pod.get("spec") or {}).get("nodeName"):
        endpoint["nodeName"] = node
    return endpoint


def _grouped(found: list[Backend]) -> dict[Ports, list[Backend]]:
    groups: dict[Ports, list[Backend]] = {}
    for backend in found:
        groups.setdefault(backend.ports, []).append(backend)
    return groups


def slices(service: JsonObject, pods: list[JsonObject]) -> list[JsonObject]:
    """Return the EndpointSlice bodies (without names) a Service should have."""
    meta = service["metadata"]
    found = _grouped(backends(service, pods))
    groups: dict[Ports | None, list[Backend]] = {k: v for k, v in found.items()}
    if not groups:
        groups[None] = []  # the placeholder slice of a Service with no backends
    labels = {**(meta.get("labels") or {}), SERVICE_NAME: meta["name"], MANAGED_BY: CONTROLLER}
    out = []
    for ports, members in groups.items():
        body: JsonObject = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "namespace": meta.get("namespace", ""),
                "labels": labels,
                "ownerReferences": [reconciling.controller_ref(_as_service(service))],
            },
            "addressType": "IPv4",
            "endpoints": [_slice_endpoint(service, b) for b in members],
            "ports": _port_list(ports),
        }
        out.append(body)
    return out


def _as_service(service: JsonObject) -> JsonObject:
    return {**service, "apiVersion": "v1", "kind": "Service"}


def _address(service: JsonObject, backend: Backend) -> JsonObject:
    address: JsonObject = {"ip": backend.ip, "targetRef": backend.target_ref()}
    if hostname := backend.hostname(service):
        address["hostname"] = hostname
    if node := (backend.pod.get("spec") or {}).get("nodeName"):
        address["nodeName"] = node
    return address


def endpoints(service: JsonObject, pods: list[JsonObject]) -> JsonObject:
    """Return the Endpoints body a Service should have: ready and not-ready addresses."""
    meta = service["metadata"]
    publish = bool(service["spec"].get("publishNotReadyAddresses"))
    # Unlike slices, Endpoints leave terminating pods out unless not-ready ones are published.
    found = [b for b in backends(service, pods) if publish or not b.terminating]
    subsets = []
    for ports, members in _grouped(found).items():
        subset: JsonObject = {}
        if ready := [_address(service, b) for b in members if b.ready]:
            subset["addresses"] = ready
        if not_ready := [_address(service, b) for b in members if not b.ready]:
            subset["notReadyAddresses"] = not_ready
        if port_list := _port_list(ports):
            subset["ports"] = [{k: v for k, v in p.items() if v != ""} for p in port_list]
        subsets.append(subset)
    body: JsonObject = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": meta["name"], "namespace": meta.get("namespace", "")},
    }
    if labels := meta.get("labels"):
        body["metadata"]["labels"] = dict(labels)
    if subsets:
        body["subsets"] = subsets
    return body


def _slice_key(body: JsonObject) -> str:
    ports = body.get("ports")
    return repr(None if ports is None else sorted((p["name"], p["port"]) for p in ports))


def slice_changes(
    existing: list[JsonObject], wanted: list[JsonObject]
) -> tuple[list[JsonObject], list[JsonObject], list[JsonObject]]:
    """Pair stored slices with wanted ones by port set: (to create, to update, to delete)."""
    by_key = {_slice_key(s): s for s in existing}
    create, update = [], []
    for body in wanted:
        old = by_key.pop(_slice_key(body), None)
        if old is None:
            create.append(body)
            continue
        merged = copy.deepcopy(old)
        merged["metadata"]["labels"] = body["metadata"]["labels"]
        merged.update({k: body[k] for k in ("addressType", "endpoints", "ports")})
        if merged != old:
            update.append(merged)
    return create, update, list(by_key.values())


class EndpointsController:
    """Keeps every selector Service's EndpointSlices and Endpoints in step with its pods."""

    resources = (SERVICES, PODS, SLICES, ENDPOINTS)

    def __init__(self) -> None:
        self._selectors = SelectorIndex()

    def keys_for(self, handler: Handler, event: Event) -> Iterable[Key]:
        """The Service itself, the Services selecting a pod, or the owner of a slice."""
        meta = event.obj["metadata"]
        namespace = meta.get("namespace", "")
        if event.resource == SERVICES:
            self._selectors.follow(event)
        if event.resource == SERVICES or event.resource == ENDPOINTS:
            return [(namespace, meta["name"])]
        if event.resource == SLICES:
            owner = (meta.get("labels") or {}).get(SERVICE_NAME)
            return [(namespace, owner)] if owner else []
        pods = [event.obj, *([event.old] if event.old is not None else [])]
        names = {name for pod in pods for name in self._selectors.candidates(pod)}
        found = (handler.store.get(SERVICES, namespace, name) for name in sorted(names))
        return [
            (namespace, service["metadata"]["name"])
            for service in found
            if service is not None and any(selects(service, pod) for pod in pods)
        ]

    def reconcile(self, handler: Handler, key: Key) -> float | None:
        """Write the Service's slices and Endpoints, or remove them with the Service."""
        store = handler.store
        namespace, name = key
        service = store.get(SERVICES, namespace, name)
        existing = store.selected(SLICES, namespace, {SERVICE_NAME: name, MANAGED_BY: CONTROLLER})
        selector = ((service or {}).get("spec") or {}).get("selector")
        if service is None or not selector:
            for body in existing:
                reconciling.delete(handler, SLICES, body)
            old_endpoints = store.get(ENDPOINTS, namespace, name)
            if service is None and old_endpoints is not None:
                reconciling.delete(handler, ENDPOINTS, old_endpoints)
            return None
        pods = store.selected(PODS, namespace, selector)
        create, update, remove = slice_changes(existing, slices(service, pods))
        kind = reconciling.kind(handler, SLICES)
        for body in update:
            handler.update(kind, namespace, body["metadata"]["name"], "", body, WriteOptions())
        for body in create:
            body["metadata"]["generateName"] = f"{name}-"
            reconciling.create(handler, SLICES, namespace, body)
        for body in remove:
            reconciling.delete(handler, SLICES, body)
        self._write_endpoints(handler, endpoints(service, pods))
        return None

    @staticmethod
    def _write_endpoints(handler: Handler, body: JsonObject) -> None:
        meta = body["metadata"]
        old = handler.store.get(ENDPOINTS, meta["namespace"], meta["name"])
        if old is None:
            reconciling.create(handler, ENDPOINTS, meta["namespace"], body)
            return
        new = copy.deepcopy(old)
        new["metadata"]["labels"] = meta.get("labels")
        if new["metadata"]["labels"] is None:
            del new["metadata"]["labels"]
        new.pop("subsets", None)
        new.update({k: v for k, v in body.items() if k == "subsets"})
        if new != old:
            kind = reconciling.kind(handler, ENDPOINTS)
            handler.update(kind, meta["namespace"], meta["name"], "", new, WriteOptions())


class SelectorIndex:
    """Which Services may select a pod: each selector Service filed under one selector pair.

    kube-controller-manager matches every Service of the namespace against each changed pod;
    here a pod's labels name the candidates. Any pair of a Service's selector would do (a pod
    it selects carries them all); it is filed under the pair the fewest other selectors share
    (`ray.io/cluster=<name>`, not the label every Ray Service has), so a pod's change costs
    about the same whatever the number of Services.
    """

    def __init__(self) -> None:
        self._names: dict[Pair, set[str]] = {}
        """(namespace, label, value) -> the Services filed under it."""
        self._filed: dict[Key, Pair] = {}
        self._sharing: collections.Counter[Pair] = collections.Counter()
        """How many selectors hold each pair."""
        self._selectors: dict[Key, list[Pair]] = {}

    def follow(self, event: Event) -> None:
        """File a Service under its current selector (or nowhere, once deleted)."""
        meta = event.obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        self._forget(key)
        selector = (event.obj.get("spec") or {}).get("selector") or {}
        if event.type == "DELETED" or not isinstance(selector, dict) or not selector:
            return
        pairs = [(key[0], label, str(value)) for label, value in sorted(selector.items())]
        entry = min(pairs, key=lambda pair: self._sharing[pair])
        self._filed[key], self._selectors[key] = entry, pairs
        self._names.setdefault(entry, set()).add(key[1])
        self._sharing.update(pairs)

    def _forget(self, key: Key) -> None:
        entry = self._filed.pop(key, None)
        if entry is not None:
            self._names[entry].discard(key[1])
            if not self._names[entry]:
                del self._names[entry]
        for pair in self._selectors.pop(key, []):
            self._sharing[pair] -= 1
            if not self._sharing[pair]:
                del self._sharing[pair]

    def candidates(self, pod: JsonObject) -> set[str]:
        """The Services (by name) filed under one of the pod's labels."""
        meta = pod["metadata"]
        namespace = meta.get("namespace", "")
        out: set[str] = set()
        for label, value in (meta.get("labels") or {}).items():
            out |= self._names.get((namespace, label, str(value)), set())
        return out


def ready_targets(slice_list: list[JsonObject], port_name: str) -> list[tuple[str, int]]:
    """Return (IP, port) of every ready endpoint serving the Service port with this name."""
    out = []
    for body in slice_list:
        ports = [p["port"] for p in body.get("ports") or [] if p.get("name", "") == port_name]
        for endpoint in body.get("endpoints") or []:
            if not (endpoint.get("conditions") or {}).get("ready", True):
                continue
            out += [
                (address, port) for address in endpoint.get("addresses") or [] for port in ports
            ]
    return sorted(set(out))


def service_slices(view: ObjectView, namespace: str, name: str) -> list[JsonObject]:
    """Return the stored EndpointSlices of one Service."""
    return [
        s
        for s in view.objects(SLICES, namespace)
        if (s["metadata"].get("labels") or {}).get(SERVICE_NAME) == name
    ]
