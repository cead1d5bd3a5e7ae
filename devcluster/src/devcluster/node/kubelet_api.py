"""The kubelet API the API server calls for `kubectl logs`: HTTPS on the node's port.

kube-apiserver answers `GET pods/<name>/log` by dialling the node's InternalIP at the kubelet
port the Node reports, with its kubelet client certificate, and streaming back
`/containerLogs/<namespace>/<pod>/<container>` (follow, previous, tailLines). This serves that
path from the kubelet's own log capture (`Kubelet.serve_log`), and accepts only clients whose
certificate the control plane's CA signed for the API server (or an administrator).

`kubelet_api_app` is a plain aiohttp application, so the same handler can sit behind another
listener (a shim that adds exec and port-forward in front of this port); `users=None` then
leaves authentication to that listener.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from aiohttp import web

from devcluster import statuses
from devcluster.store import PODS, ObjectView

JsonObject = dict[str, Any]
LogServer = Callable[[web.Request, JsonObject, str], Awaitable[web.StreamResponse]]
_ADMINS = "system:masters"


def peer_identity(request: web.Request) -> tuple[str, tuple[str, ...]] | None:
    """The user (CN) and groups (O) of the client certificate, None without one."""
    transport = request.transport
    cert = transport.get_extra_info("peercert") if transport is not None else None
    if not cert:
        return None
    user, groups = "", []
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                user = value
            elif key == "organizationName":
                groups.append(value)
    return user, tuple(groups)


def _authenticated(users: Collection[str]) -> Any:
    @web.middleware
    async def check(request: web.Request, handler: Any) -> web.StreamResponse:
        identity = peer_identity(request)
        if identity is None:
            return web.Response(status=401, text="Unauthorized\n")
        user, groups = identity
        if user not in users and _ADMINS not in groups:
            return web.Response(status=403, text=f"Forbidden (user={user})\n")
        response: web.StreamResponse = await handler(request)
        return response

    return check


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def container_logs(view: ObjectView, logs: LogServer) -> Handler:
    """The `/containerLogs/{namespace}/{pod}/{container}` handler."""

    async def handle(request: web.Request) -> web.StreamResponse:
        info = request.match_info
        pod = view.get(PODS, info["namespace"], info["pod"])
        if pod is None:
            return web.Response(status=404, text=f'pod "{info["pod"]}" not found on this node\n')
        try:
            return await logs(request, pod, info["container"])
        except statuses.ApiError as err:
            return web.Response(status=err.code, text=err.message)

    return handle


def kubelet_api_app(
    view: ObjectView, logs: LogServer, users: Collection[str] | None
) -> web.Application:
    """The kubelet API's routes; with `users`, only those client identities may call them."""
    middlewares = [_authenticated(users)] if users is not None else []
    app = web.Application(middlewares=middlewares)
    app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", container_logs(view, logs))
    app.router.add_get("/healthz", lambda _: _ok())
    return app


async def _ok() -> web.Response:
    return web.Response(text="ok")


def server_tls(cert: str, key: str, ca: str) -> ssl.SSLContext:
    """TLS that presents the kubelet's serving certificate and requires a CA-signed client."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=ca)
    context.load_cert_chain(cert, key)
    context.verify_mode = ssl.CERT_REQUIRED
    return context
