"""The aiohttp application: URL layout, discovery and OpenAPI routes, and error bodies.

Resource URLs are parsed by hand rather than by route table because the same shape serves
every kind, and whether `/api/v1/namespaces/x/status` is a namespace's status or a resource
called `status` in namespace `x` depends on the kind table at request time.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from devcluster import discovery, statuses
from devcluster.endpoints import Endpoints, Target
from devcluster.faults import Faults
from devcluster.kinds import KindTable
from devcluster.networking import proxy_subresource
from devcluster.openapi import OpenApiDocuments

JsonObject = dict[str, Any]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
log = logging.getLogger(__name__)


def json_response(
    body: Any, code: int = 200, content_type: str = "application/json"
) -> web.Response:
    """Return a compact JSON response."""
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=code,
        headers={"Content-Type": content_type},
    )


@web.middleware
async def status_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn every failure into the Status body kube-apiserver would send."""
    try:
        return await handler(request)
    except statuses.ApiError as err:
        response = json_response(err.body(), err.code)
        response.headers.update(err.headers)
        return response
    except web.HTTPException:
        raise
    except Exception as err:  # the server must answer, as kube-apiserver does, with a 500
        log.exception("internal error serving %s %s", request.method, request.path)
        body = statuses.ApiError(500, "InternalError", f"Internal error occurred: {err}").body()
        return json_response(body, 500)


@dataclass
class ParsedPath:
    """A resource URL split into its parts; `plural` is empty for discovery URLs."""

    group: str
    version: str
    namespace: str = ""
    plural: str = ""
    name: str = ""
    subresource: str = ""
    watch: bool = False


def parse_path(kinds: KindTable, parts: list[str]) -> ParsedPath | None:
    """Split `/api/...` or `/apis/...` segments; None when the URL cannot be a resource."""
    if parts[0] == "api":
        if len(parts) < 2:
            return None
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 3:
            return None
        group, version, rest = parts[1], parts[2], parts[3:]
    parsed = ParsedPath(group, version)
    if rest and rest[0] == "watch":
        parsed.watch, rest = True, rest[1:]
    if len(rest) >= 3 and rest[0] == "namespaces":
        row = kinds.get(group, version, rest[2])
        if row is not None and row.namespaced:
            parsed.namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    parsed.plural, parsed.name, parsed.subresource = [*rest, "", "", ""][:3]
    return parsed


class Routes:
    """Request entry points, bound to the cluster's kinds, endpoints and documents."""

    def __init__(
        self,
        kinds: KindTable,
        endpoints: Endpoints,
        faults: Faults,
        proxy: proxy_subresource.ProxySubresource | None = None,
    ) -> None:
        self._kinds = kinds
        self._endpoints = endpoints
        self._docs = OpenApiDocuments(kinds)
        self._faults = faults
        self._proxy = proxy

    def app(self) -> web.Application:
        """Return the aiohttp application."""
        app = web.Application(middlewares=[status_errors], client_max_size=8 * 1024 * 1024)
        app.router.add_get("/version", self._version)
        for probe in ("/healthz", "/livez", "/readyz"):
            app.router.add_get(probe, self._ok)
        app.router.add_get("/debug/faults", self._fault_counts)
        app.router.add_get("/openapi/v2", self._openapi_v2)
        app.router.add_get("/openapi/v3", self._openapi_index)
        app.router.add_get("/openapi/v3/{path:.*}", self._openapi_document)
        app.router.add_route("*", "/api{tail:.*}", self._api)
        app.router.add_route("*", "/apis{tail:.*}", self._api)
        return app

    async def _version(self, _request: web.Request) -> web.Response:
        return json_response(discovery.version_info())

    async def _ok(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _fault_counts(self, _request: web.Request) -> web.Response:
        # Not a Kubernetes URL: the fault suites read what was injected from here.
        return json_response(self._faults.snapshot())

    async def _openapi_v2(self, _request: web.Request) -> web.Response:
        # kubectl falls back to v2 only for kinds v3 does not know; it decodes the answer as
        # protobuf, and an empty message is an empty document: "no schema, nothing to check".
        return web.Response(
            body=b"",
            headers={"Content-Type": "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"},
        )

    async def _openapi_index(self, _request: web.Request) -> web.Response:
        return json_response(self._docs.index())

    async def _openapi_document(self, request: web.Request) -> web.Response:
        body = self._docs.document(request.match_info["path"])
        if body is None:
            raise statuses.not_found_path()
        return web.Response(body=body, headers={"Content-Type": "application/json"})

    async def _api(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if parts[0] not in ("api", "apis"):
            raise statuses.not_found_path()
        # `/proxy` URLs go on past the subresource, so they are matched before resource URLs.
        if self._proxy is not None and (proxied := proxy_subresource.parse(request.raw_path)):
            return await self._proxy.serve(request, proxied)
        if len(parts) == 1 or (parts[0] == "apis" and len(parts) == 2):
            return self._discovery(request, parts)
        parsed = parse_path(self._kinds, parts)
        if parsed is None:
            raise statuses.not_found_path()
        if not parsed.plural:
            return self._discovery(request, parts)
        kind = self._kinds.get(parsed.group, parsed.version, parsed.plural)
        if kind is None:
            raise statuses.not_found_path()
        target = Target(kind, parsed.namespace, parsed.name, parsed.subresource, parsed.watch)
        cut_after = await self._faults.before(request, target)
        return await self._endpoints.dispatch(request, target, cut_after)

    def _discovery(self, request: web.Request, parts: list[str]) -> web.Response:
        if request.method != "GET":
            raise statuses.method_not_allowed()
        accept = request.headers.get("Accept", "")
        if len(parts) == 1:
            if "as=APIGroupDiscoveryList" in accept:
                body = discovery.aggregated(self._kinds, core=parts[0] == "api")
                return json_response(body, content_type=discovery.AGGREGATED_TYPE)
            if parts[0] == "api":
                host = request.host or "127.0.0.1"
                return json_response(discovery.core_versions(host))
            return json_response(discovery.group_list(self._kinds))
        if parts[0] == "apis" and len(parts) == 2:
            api_group = discovery.api_group(self._kinds, parts[1])
            if api_group is None:
                raise statuses.not_found_path()
            return json_response(api_group)
        group_name, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        listing = discovery.resource_list(self._kinds, group_name, version)
        if listing is None:
            raise statuses.not_found_path()
        return json_response(listing)
