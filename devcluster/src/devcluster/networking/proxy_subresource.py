"""The `services/<name>/proxy` and `pods/<name>/proxy` subresources: HTTP into the cluster.

The operator runs on the host, outside the pod network's DNS, and reaches each Ray dashboard
the way KubeRay's `--use-kubernetes-proxy` mode does: through kube-apiserver, at
`/api/v1/namespaces/{ns}/services/{name}[:{port}]/proxy/{path}` (or `{scheme}:{name}:{port}`),
and likewise for pods. As kube-apiserver does, the port is a Service port's name or number
(a pod's container port for pods, the first one if omitted), a Service is served by a random
ready endpoint, the method, query string, headers and body pass through, and failures are a
503 `Status`: no ready endpoint, or the backend could not be reached in time. Responses are
buffered, not streamed. Destinations are limited to loopback and the pod network.

`parse` and `resolve` are pure and table-tested; `ProxySubresource` does the HTTP.
"""

from __future__ import annotations

import random
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import yarl
from aiohttp import web

from devcluster import statuses
from devcluster.handler import Handler
from devcluster.networking.backends import container_port
from devcluster.networking.endpoint_slices import ready_targets, service_slices
from devcluster.networking.service_proxy import allowed_destination
from devcluster.store import ObjectView

JsonObject = dict[str, Any]
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "authorization",
    }
)
_PATH_SAFE = "/:@!$&'()*+,;=~"


@dataclass(frozen=True)
class ProxyTarget:
    """A proxy URL split into what it addresses and the path to forward."""

    resource: str  # services or pods
    namespace: str
    name: str
    scheme: str
    port: str
    path: str


def parse(raw_path: str) -> ProxyTarget | None:
    """Split `/api/v1/namespaces/{ns}/{services|pods}/{id}/proxy[/path]`, else None."""
    parts = raw_path.split("?", 1)[0].split("/")
    if len(parts) < 8 or parts[1:4] != ["api", "v1", "namespaces"] or parts[7] != "proxy":
        return None
    if parts[5] not in ("services", "pods"):
        return None
    ident = urllib.parse.unquote(parts[6]).split(":")
    if len(ident) > 3:
        return None
    # `name`, `name:port` or `scheme:name:port`, as net.SplitSchemeNamePort reads them.
    scheme, name, port = ("", *ident, "")[:3] if len(ident) < 3 else ident
    if len(ident) == 2:
        name, port = ident
    rest = urllib.parse.quote(urllib.parse.unquote("/".join(parts[8:])), safe=_PATH_SAFE)
    namespace = urllib.parse.unquote(parts[4])
    return ProxyTarget(parts[5], namespace, name, scheme or "http", port, "/" + rest)


def _unavailable(message: str) -> statuses.ApiError:
    return statuses.ApiError(503, "ServiceUnavailable", message)


def resolve_service(
    service: JsonObject, slices: list[JsonObject], port: str
) -> list[tuple[str, int]]:
    """Return the ready (IP, port) pairs that may serve a Service port, or raise 503."""
    name = service["metadata"]["name"]
    service_ports = (service.get("spec") or {}).get("ports") or []
    chosen = next(
        (
            p
            for p in service_ports
            if not port or p.get("name", "") == port or str(p.get("port")) == port
        ),
        None,
    )
    if chosen is None:
        raise _unavailable(f'no service port "{port}" found for service "{name}"')
    targets = ready_targets(slices, chosen.get("name", ""))
    if not targets:
        raise _unavailable(f'no endpoints available for service "{name}"')
    return targets


def resolve_pod(pod: JsonObject, port: str) -> tuple[str, int]:
    """Return the (IP, port) a pod proxy URL addresses, or raise 503."""
    name = pod["metadata"]["name"]
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        raise _unavailable(f'pod "{name}" has no IP address yet')
    if port.isdigit():
        return ip, int(port)
    if port:
        number = container_port(pod, port)
        if number is None:
            raise _unavailable(f'no port "{port}" found for pod "{name}"')
        return ip, number
    for container in (pod.get("spec") or {}).get("containers") or []:
        for declared in container.get("ports") or []:
            return ip, int(declared["containerPort"])
    return ip, 80


def forwarded_headers(headers: Any) -> dict[str, str]:
    """Return the request or response headers a proxy passes on."""
    return {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}


class ProxySubresource:
    """Serves proxy URLs by forwarding to the addressed pod or a ready Service endpoint."""

    def __init__(self, handler: Handler, timeout: float = 60.0, pod_network: bool = True):
        self._handler = handler
        self._timeout = aiohttp.ClientTimeout(total=timeout, connect=5.0)
        self._pod_network = pod_network
        self._session: aiohttp.ClientSession | None = None
        # Pod ports something in devcluster serves on loopback (the simulated Ray dashboards).
        self.local: Callable[[str, int], tuple[str, int] | None] | None = None

    async def close(self) -> None:
        """Close the client connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def destination(self, target: ProxyTarget) -> tuple[str, int]:
        """Return the IP and port a proxy request goes to, or raise the Status to answer."""
        store = self._handler.store
        obj = store.get("/" + target.resource, target.namespace, target.name)
        if obj is None:
            raise statuses.not_found("", target.resource, target.name)
        if target.resource == "pods":
            ip, port = resolve_pod(obj, target.port)
        else:
            slices = service_slices(self._handler.store, target.namespace, target.name)
            ip, port = random.choice(resolve_service(obj, slices, target.port))
        if self.local is not None and (local := self.local(ip, port)) is not None:
            return local
        if not allowed_destination(ip) or (not self._pod_network and not ip.startswith("127.")):
            raise _unavailable(f"address {ip} is not reachable from devcluster")
        return ip, port

    def service_target(self, namespace: str, name: str, port: int) -> tuple[str, int] | None:
        """A ready endpoint (pod IP, port) behind a Service port number, or None."""
        return service_target(self._handler.store, namespace, name, port)

    async def serve(self, request: web.Request, target: ProxyTarget) -> web.Response:
        """Forward one request and answer with the backend's response."""
        ip, port = self.destination(target)
        url = f"{target.scheme}://{ip}:{port}{target.path}"
        if "?" in request.raw_path:
            url += "?" + request.raw_path.split("?", 1)[1]
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout, auto_decompress=False)
        body = await request.read()
        # As kube-apiserver's proxy does; simulated dashboards tell the operator's calls by it.
        client = request.remote or "127.0.0.1"
        try:
            async with self._session.request(
                request.method,
                yarl.URL(url, encoded=True),  # already encoded: do not quote it again
                headers={**forwarded_headers(request.headers), "X-Forwarded-For": client},
                data=body or None,
                allow_redirects=False,
                ssl=False,
            ) as upstream:
                content = await upstream.read()
                return web.Response(
                    status=upstream.status,
                    body=content,
                    headers=forwarded_headers(upstream.headers),
                )
        except (aiohttp.ClientError, TimeoutError) as err:
            raise _unavailable(
                f"error trying to reach service: {err or type(err).__name__}"
            ) from err


def service_target(
    view: ObjectView, namespace: str, name: str, port: int
) -> tuple[str, int] | None:
    """A ready endpoint (pod IP, port) behind a Service port number in `view`, or None."""
    service = view.get("/services", namespace, name)
    if service is None:
        return None
    try:
        slices = service_slices(view, namespace, name)
        return random.choice(resolve_service(service, slices, str(port)))
    except statuses.ApiError:
        return None
