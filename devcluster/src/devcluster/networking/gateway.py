"""A minimal Gateway API data plane: each Gateway's HTTP listener is a port on 127.0.0.1.

Incremental RayService upgrades (S13, S14 in docs/kuberay-parity.md) move traffic by rewriting
the weights of an HTTPRoute's backendRefs; on a real cluster a Gateway controller (Istio, Envoy
Gateway, …) routes by them. devcluster has none, so this stands in for one, for any
GatewayClass: for each Gateway with an HTTP listener it opens an ephemeral port on loopback,
publishes it in the annotation `LISTENER_PORTS_ANNOTATION` (a JSON map of listener name to
port), marks the Gateway Accepted and Programmed, and each attached HTTPRoute's parent Accepted
and ResolvedRefs (when its backend Services exist). A request goes to the rule whose path
prefix matches longest, then to one backendRef drawn by weight, then to a ready endpoint of
that Service port (as kube-proxy would); the answer carries `BACKEND_HEADER` naming the
Service.

Only what incremental upgrades use is here: HTTP, `PathPrefix` matches, Service backends in
the route's namespace. The Gateway API CRDs are not installed by default; when they are
missing, there is simply nothing to serve. It reads an `ObjectView` and writes through
`ObjectWrites`, so it serves devcluster's own API server (`HandlerWrites`) and, as part of
the node, a real one (`devcluster.node`). `attached_routes`, `pick_rule` and
`ports_by_number` are pure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import socket
from datetime import UTC, datetime
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from devcluster import statuses
from devcluster.controllers import reconciling
from devcluster.handler import Handler, WriteOptions
from devcluster.networking.endpoint_slices import SERVICES, ready_targets, service_slices
from devcluster.networking.service_proxy import allowed_destination
from devcluster.store import Event, ObjectView

JsonObject = dict[str, Any]
GATEWAYS = "gateway.networking.k8s.io/gateways"
HTTPROUTES = "gateway.networking.k8s.io/httproutes"
LISTENER_PORTS_ANNOTATION = "devcluster.kuberay-temporal.io/listener-ports"
BACKEND_HEADER = "x-devcluster-backend"
CONTROLLER_NAME = "devcluster.kuberay-temporal.io/gateway"
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "upgrade", "host", "content-length"}
)
_TIMEOUT = aiohttp.ClientTimeout(total=30)
log = logging.getLogger(__name__)
Key = tuple[str, str, str]  # namespace, Gateway, listener


class ObjectWrites(Protocol):
    """How the data plane changes Gateways and HTTPRoutes on its API server."""

    async def replace(self, resource: str, obj: JsonObject) -> JsonObject:
        """Write a whole object (an annotation changed); return what was stored."""

    async def write_status(self, resource: str, obj: JsonObject, status: JsonObject) -> None:
        """Write an object's status when it differs; a refusal is left be."""


class HandlerWrites:
    """`ObjectWrites` on devcluster's own handler."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler

    async def replace(self, resource: str, obj: JsonObject) -> JsonObject:
        """Update through the handler's verb."""
        meta = obj["metadata"]
        kind = reconciling.kind(self.handler, resource)
        ns, name = meta.get("namespace", ""), meta["name"]
        return self.handler.update(kind, ns, name, "", obj, WriteOptions()).obj

    async def write_status(self, resource: str, obj: JsonObject, status: JsonObject) -> None:
        """A CRD installed without a status subresource refuses the write: leave it be."""
        with contextlib.suppress(statuses.ApiError):
            reconciling.write_status(self.handler, resource, obj, status)


def attached_routes(routes: list[JsonObject], namespace: str, gateway: str) -> list[JsonObject]:
    """The HTTPRoutes whose parentRefs name this Gateway."""
    out = []
    for route in routes:
        meta = route["metadata"]
        for parent in (route.get("spec") or {}).get("parentRefs") or []:
            parent_ns = parent.get("namespace") or meta.get("namespace", "")
            if parent.get("name") == gateway and parent_ns == namespace:
                out.append(route)
                break
    return out


def pick_rule(routes: list[JsonObject], path: str) -> tuple[JsonObject, JsonObject] | None:
    """(route, rule) whose PathPrefix match is the longest prefix of `path`."""
    best: tuple[int, JsonObject, JsonObject] | None = None
    for route in routes:
        for rule in (route.get("spec") or {}).get("rules") or []:
            matches = rule.get("matches") or [{"path": {"type": "PathPrefix", "value": "/"}}]
            for match in matches:
                prefix = str((match.get("path") or {}).get("value") or "/")
                if _prefix_matches(prefix, path) and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), route, rule)
    return (best[1], best[2]) if best else None


def _prefix_matches(prefix: str, path: str) -> bool:
    trimmed = prefix.rstrip("/")
    return not trimmed or path == trimmed or path.startswith(trimmed + "/")


def ports_by_number(service: JsonObject) -> dict[int, str]:
    """A Service's port numbers and their names (backendRefs name ports by number)."""
    ports = (service.get("spec") or {}).get("ports") or []
    return {int(p["port"]): str(p.get("name", "")) for p in ports}


class GatewayDataPlane:
    """Serves every Gateway's HTTP listeners on loopback and keeps their status."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._host = host
        self._runners: dict[Key, web.AppRunner] = {}
        self._ports: dict[Key, int] = {}
        self._view: ObjectView | None = None
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return "GatewayDataPlane()"

    async def run(self, handler: Handler) -> None:
        """Serve devcluster's own Gateways until cancelled."""
        await self.follow(handler.store, HandlerWrites(handler))

    async def follow(self, view: ObjectView, writes: ObjectWrites) -> None:
        """Follow Gateways and HTTPRoutes until cancelled, then close every listener."""
        self._view = view
        self._session = aiohttp.ClientSession(timeout=_TIMEOUT, auto_decompress=False)
        changed = asyncio.Event()

        def listen(event: Event) -> None:
            if event.resource in (GATEWAYS, HTTPROUTES, SERVICES):
                changed.set()

        view.add_listener(listen)
        try:
            while True:
                await self.sync(view, writes)
                await changed.wait()
                changed.clear()
        finally:
            view.remove_listener(listen)
            await asyncio.shield(self.close())

    async def sync(self, view: ObjectView, writes: ObjectWrites) -> None:
        """Open and close listeners as Gateways come and go; write the statuses."""
        gateways = view.objects(GATEWAYS)
        wanted: set[Key] = set()
        for gateway in gateways:
            meta = gateway["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            for listener in (gateway.get("spec") or {}).get("listeners") or []:
                if str(listener.get("protocol", "HTTP")).upper() == "HTTP":
                    wanted.add((meta.get("namespace", ""), meta["name"], listener["name"]))
        for key in [k for k in self._runners if k not in wanted]:
            await self._runners.pop(key).cleanup()
            self._ports.pop(key, None)
        for key in sorted(wanted - set(self._runners)):
            await self._open(key)
        for gateway in gateways:
            await self._write_gateway(writes, gateway)
        for route in view.objects(HTTPROUTES):
            await self._write_route(view, writes, route)

    async def close(self) -> None:
        """Close every listener and the upstream connection pool."""
        for runner in self._runners.values():
            await runner.cleanup()
        self._runners.clear()
        if self._session is not None:
            await self._session.close()

    async def _open(self, key: Key) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", lambda request: self._serve(key, request))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((self._host, 0))  # an ephemeral port: tests run several stacks side by side
        await web.SockSite(runner, sock).start()
        self._ports[key] = int(sock.getsockname()[1])
        self._runners[key] = runner
        log.info("gateway %s/%s listener %s on %s:%d", *key, self._host, self._ports[key])

    async def _write_gateway(self, writes: ObjectWrites, gateway: JsonObject) -> None:
        meta = gateway["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        ports = {k[2]: p for k, p in self._ports.items() if k[:2] == (ns, name)}
        annotations = dict(meta.get("annotations") or {})
        if ports and annotations.get(LISTENER_PORTS_ANNOTATION) != json.dumps(ports):
            annotations[LISTENER_PORTS_ANNOTATION] = json.dumps(ports)
            body = {**gateway, "metadata": {**meta, "annotations": annotations}}
            gateway = await writes.replace(GATEWAYS, body)
        generation = gateway["metadata"].get("generation", 1)
        status = {
            **(gateway.get("status") or {}),
            "addresses": [{"type": "IPAddress", "value": self._host}],
            "conditions": _conditions(
                (gateway.get("status") or {}).get("conditions"),
                {"Accepted": bool(ports), "Programmed": bool(ports)},
                generation,
            ),
        }
        await writes.write_status(GATEWAYS, gateway, status)

    async def _write_route(self, view: ObjectView, writes: ObjectWrites, route: JsonObject) -> None:
        meta = route["metadata"]
        ns, generation = meta.get("namespace", ""), meta.get("generation", 1)
        refs = [
            ref
            for rule in (route.get("spec") or {}).get("rules") or []
            for ref in rule.get("backendRefs") or []
        ]
        resolved = all(view.get(SERVICES, ns, ref.get("name", "")) for ref in refs)
        parents = []
        before = (route.get("status") or {}).get("parents") or []
        for index, parent in enumerate((route.get("spec") or {}).get("parentRefs") or []):
            gateway_ns = parent.get("namespace") or ns
            accepted = view.get(GATEWAYS, gateway_ns, parent.get("name", "")) is not None
            previous = before[index].get("conditions") if index < len(before) else None
            parents.append(
                {
                    "parentRef": parent,
                    "controllerName": CONTROLLER_NAME,
                    "conditions": _conditions(
                        previous, {"Accepted": accepted, "ResolvedRefs": resolved}, generation
                    ),
                }
            )
        await writes.write_status(HTTPROUTES, route, {"parents": parents})

    async def _serve(self, key: Key, request: web.Request) -> web.StreamResponse:
        view, session = self._view, self._session
        assert view is not None and session is not None
        ns, gateway, _ = key
        routes = attached_routes(view.objects(HTTPROUTES), ns, gateway)
        picked = pick_rule(routes, request.path)
        if picked is None:
            return web.Response(status=404, text="no HTTPRoute matches\n")
        route, rule = picked
        backends = [
            r
            for r in rule.get("backendRefs") or []
            if int(r.get("weight", 1)) > 0 and r.get("name")
        ]
        if not backends:
            return web.Response(status=503, text="no backend with a weight\n")
        ref = random.choices(backends, weights=[int(r.get("weight", 1)) for r in backends])[0]
        route_ns = route["metadata"].get("namespace", "")
        target = self._endpoint(view, ref.get("namespace") or route_ns, ref)
        if target is None:
            return web.Response(status=503, text=f"no ready endpoint for {ref['name']}\n")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        url = f"http://{target[0]}:{target[1]}{request.rel_url}"
        try:
            async with session.request(
                request.method, url, headers=headers, data=await request.read()
            ) as upstream:
                body = await upstream.read()
                out = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP}
                out[BACKEND_HEADER] = str(ref["name"])
                return web.Response(status=upstream.status, body=body, headers=out)
        except (aiohttp.ClientError, TimeoutError) as err:
            return web.Response(status=502, text=f"backend {ref['name']}: {err}\n")

    @staticmethod
    def _endpoint(view: ObjectView, ns: str, ref: JsonObject) -> tuple[str, int] | None:
        service = view.get(SERVICES, ns, str(ref["name"]))
        if service is None:
            return None
        port_name = ports_by_number(service).get(int(ref.get("port", 0)), "")
        targets = ready_targets(service_slices(view, ns, str(ref["name"])), port_name)
        targets = [t for t in targets if allowed_destination(t[0])]
        return random.choice(targets) if targets else None


def _conditions(
    previous: list[JsonObject] | None, wanted: dict[str, bool], generation: int
) -> list[JsonObject]:
    """Conditions with the given truth; a transition time changes only with the status."""
    before = {c.get("type"): c for c in previous or []}
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = []
    for kind, ok in wanted.items():
        status = "True" if ok else "False"
        old = before.get(kind) or {}
        out.append(
            {
                "type": kind,
                "status": status,
                "reason": kind if ok else "Pending",
                "message": "",
                "observedGeneration": generation,
                "lastTransitionTime": old.get("lastTransitionTime", now)
                if old.get("status") == status
                else now,
            }
        )
    return out
