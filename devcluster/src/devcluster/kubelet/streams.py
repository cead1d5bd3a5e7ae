"""The kubelet's exec and port-forward: a Go server in front of the kubelet asks it two things.

The API server sends `kubectl exec` and `kubectl port-forward` to the kubelet port as SPDY/3.1
(it translates kubectl's WebSockets; the Python client's v4 WebSocket passes through as it is).
No maintained Python library speaks SPDY, so `kubelet-streams` (controlplane/cmd/, built with
the control plane) takes the kubelet port instead. It serves exec and port-forward with
Kubernetes' own server code, forwards container logs and `/healthz` to the kubelet's
application on loopback and answers 404 to every other path. That application also answers
what the shim needs to know:

- `GET /streams/exec-target/{namespace}/{pod}/{container}`: the host argv prefix that enters
  the running container and the container's environment, or 404;
- `GET /streams/pod-ip/{namespace}/{pod}`: the IP that port-forward dials from the host, or 404.

Both take `?uid=` when the API server named the pod's UID, so a pod deleted and created again
under its name is not mistaken for the one the client meant. `add_routes` puts them on the
loopback application; `running_shim` runs the shim in front of it; `serving_kubelet_api` does
both for a kubelet API application. That application must stay on loopback: it has no
authentication of its own, and an exec target carries the container's environment, Secrets
included.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from devcluster.kubelet.kubelet import Kubelet

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_SERVING = b"serving on "  # the shim's one line on stdout, once it listens
_START_WITHIN = 30.0
_STOP_GRACE = 5.0


def add_routes(app: web.Application, kubelet: Kubelet) -> None:
    """Answer the shim's two questions about `kubelet`'s pods on `app`."""
    app.router.add_get(
        "/streams/exec-target/{namespace}/{pod}/{container}", exec_target_handler(kubelet)
    )
    app.router.add_get("/streams/pod-ip/{namespace}/{pod}", pod_ip_handler(kubelet))


def exec_target_handler(kubelet: Kubelet) -> Handler:
    """`GET /streams/exec-target/...`: `{"argv": [...], "env": {...}}`."""

    async def handle(request: web.Request) -> web.StreamResponse:
        namespace, pod, container = _names(request, "container")
        uid = request.query.get("uid", "")
        if kubelet.pod_context(namespace, pod, uid) is None:
            return _pod_not_found(pod)
        target = kubelet.exec_target(namespace, pod, container, uid)
        if target is None:
            return web.Response(
                status=404, text=f'container "{container}" in pod "{pod}" is not running\n'
            )
        return web.json_response({"argv": list(target.argv), "env": dict(target.env)})

    return handle


def pod_ip_handler(kubelet: Kubelet) -> Handler:
    """`GET /streams/pod-ip/...`: `{"ip": "10.244.x.y"}`."""

    async def handle(request: web.Request) -> web.StreamResponse:
        namespace, pod, _ = _names(request)
        ctx = kubelet.pod_context(namespace, pod, request.query.get("uid", ""))
        if ctx is None:
            return _pod_not_found(pod)
        return web.json_response({"ip": ctx.ip})

    return handle


def _names(request: web.Request, container: str | None = None) -> tuple[str, str, str]:
    info = request.match_info
    return info["namespace"], info["pod"], info[container] if container else ""


def _pod_not_found(pod: str) -> web.Response:
    return web.Response(status=404, text=f'pod "{pod}" not found on this node\n')


@dataclass(frozen=True)
class ShimOptions:
    """How to run kubelet-streams."""

    binary: Path  # `Build.path(building.STREAMS_SHIM)`
    listen: str  # host:port the API server dials (the Node's kubelet port); port 0 picks one
    cert: Path  # the kubelet's serving certificate
    key: Path
    client_ca: Path  # only clients with a certificate from this CA get in
    backend: str  # base URL of the kubelet's loopback application, e.g. http://127.0.0.1:10255
    log_file: Path
    # Of those, the certificate CNs and Os that may call (the API server's kubelet client, the
    # administrators); none given lets every certificate the CA signed call.
    users: Sequence[str] = ()
    groups: Sequence[str] = ()


class ShimError(RuntimeError):
    """kubelet-streams did not start; its log says why."""


@asynccontextmanager
async def running_shim(options: ShimOptions) -> AsyncIterator[tuple[str, int]]:
    """Run kubelet-streams for the block; yield the (host, port) it serves on.

    Raises:
        ShimError: If it exits or stays silent instead of reporting that it listens.
    """
    options.log_file.parent.mkdir(parents=True, exist_ok=True)
    with options.log_file.open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            str(options.binary),
            f"--listen={options.listen}",
            f"--tls-cert-file={options.cert}",
            f"--tls-private-key-file={options.key}",
            f"--client-ca-file={options.client_ca}",
            f"--backend={options.backend}",
            f"--allowed-users={','.join(options.users)}",
            f"--allowed-groups={','.join(options.groups)}",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            start_new_session=True,  # Ctrl-C at the terminal is the stack's to handle
        )
    try:
        yield await _serving_address(process, options.log_file)
    finally:
        await _stop(process)


@asynccontextmanager
async def serving_kubelet_api(
    app: web.Application, kubelet: Kubelet, shim: ShimOptions
) -> AsyncIterator[tuple[str, int]]:
    """Serve `app` and the stream routes on loopback, the shim in front; yield the shim's address.

    `app` is the kubelet API without authentication (the shim checks clients); `shim.backend`
    is replaced by the loopback address `app` gets. The yielded port is the Node's kubelet port.
    """
    add_routes(app, kubelet)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        options = dataclasses.replace(shim, backend=f"http://{host}:{port}")
        async with running_shim(options) as address:
            yield address
    finally:
        await runner.cleanup()


async def _serving_address(process: asyncio.subprocess.Process, log: Path) -> tuple[str, int]:
    assert process.stdout is not None
    line = b""
    with contextlib.suppress(TimeoutError):
        line = await asyncio.wait_for(process.stdout.readline(), _START_WITHIN)
    if not line.startswith(_SERVING):
        raise ShimError(f"kubelet-streams did not start (see {log})")
    host, _, port = line[len(_SERVING) :].decode().strip().rpartition(":")
    return host.strip("[]"), int(port)


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), _STOP_GRACE)
        except TimeoutError:
            process.kill()
            await process.wait()
