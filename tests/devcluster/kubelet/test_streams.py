"""`kubectl exec`'s way into a pod: the kubelet's exec target, and the Go shim that serves it.

The process runtime (root: network namespaces) runs one pod on devcluster's own API server; the
kubelet's loopback routes (`streams.add_routes`) answer for it, and the shim is the binary built
with the control plane (`make install`; a machine that cannot build it fails here, never skips).
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from devcluster.control_plane import pki
from devcluster.control_plane.building import STREAMS_SHIM, build, default_build
from devcluster.kubelet import Kubelet, streams
from devcluster.server import DevCluster
from tests.devcluster.conftest import Kubectl

POD = "shell"
WORKDIR = "/tmp/work"  # in the container's private /tmp: no such directory on the host
V4 = "v4.channel.k8s.io"  # the Python client's protocol, which reaches the kubelet unchanged


def _pod() -> str:
    container = {
        "name": "main",
        "image": "rayproject/ray:2.41.0",
        "command": ["/bin/bash", "-c", "--", "exec sleep 1000"],
        "workingDir": WORKDIR,
        "env": [{"name": "GREETING", "value": "hello from the pod"}],
    }
    spec = {"terminationGracePeriodSeconds": 1, "containers": [container]}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD}, "spec": spec})


@dataclass
class Node:
    """devcluster with one running pod, and the kubelet's loopback routes for the shim."""

    root: Path
    kubelet: Kubelet
    backend: str  # the stream routes alone, on loopback
    pod: dict[str, Any]

    @property
    def pod_ip(self) -> str:
        return str(self.pod["status"]["podIP"])


@pytest_asyncio.fixture(scope="module")
async def node(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Node]:
    root = tmp_path_factory.mktemp("streams")
    cluster = DevCluster(root / "state", runtime="process", pod_network=True)
    await cluster.start()
    runner: web.AppRunner | None = None
    try:
        kubectl = Kubectl(cluster.kubeconfig_path, root / "cache")
        await kubectl.ok("apply", "-f", "-", stdin=_pod())
        await kubectl.ok("wait", "--for=condition=Ready", f"pod/{POD}", "--timeout=60s")
        pod = json.loads(await kubectl.ok("get", "pod", POD, "-o", "json"))
        app = web.Application()
        assert cluster.kubelet is not None
        streams.add_routes(app, cluster.kubelet)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        yield Node(root, cluster.kubelet, f"http://{host}:{port}", pod)
    finally:
        if runner is not None:
            await runner.cleanup()
        await cluster.stop()


async def _get(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        body = await response.read()
        is_json = response.content_type == "application/json"
        return response.status, json.loads(body) if is_json else body.decode()


async def test_the_exec_target_runs_a_command_inside_the_pod(node: Node) -> None:
    status, target = await _get(f"{node.backend}/streams/exec-target/default/{POD}/main")
    assert status == 200
    script = 'hostname; echo "$GREETING"; /bin/pwd; ip -o -4 addr show'
    process = await asyncio.create_subprocess_exec(
        *target["argv"], "sh", "-c", script, env=target["env"], stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    hostname, greeting, cwd, *addresses = out.decode().splitlines()
    assert (hostname, greeting, cwd) == (POD, "hello from the pod", WORKDIR)
    assert hostname != socket.gethostname()
    assert any(f"inet {node.pod_ip}/" in line for line in addresses), addresses


async def test_the_pod_ip_is_the_one_in_the_pods_status(node: Node) -> None:
    uid = node.pod["metadata"]["uid"]
    assert await _get(f"{node.backend}/streams/pod-ip/default/{POD}?uid={uid}") == (
        200,
        {"ip": node.pod_ip},
    )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        pytest.param(
            f"exec-target/default/{POD}/ghost",
            f'container "ghost" in pod "{POD}" is not running',
            id="unknown-container",
        ),
        pytest.param("exec-target/default/nobody/main", '"nobody" not found', id="unknown-pod"),
        pytest.param(f"exec-target/other/{POD}/main", "not found", id="other-namespace"),
        pytest.param(f"exec-target/default/{POD}/main?uid=x", "not found", id="other-uid"),
        pytest.param(f"pod-ip/default/{POD}?uid=x", "not found", id="ip-of-other-uid"),
    ],
)
async def test_what_does_not_run_here_is_not_found(node: Node, path: str, message: str) -> None:
    status, text = await _get(f"{node.backend}/streams/{path}")
    assert status == 404 and message in text


@pytest.fixture(scope="module")
def shim_binary() -> Path:
    target = default_build()
    build(target, quiet=True)
    return target.path(STREAMS_SHIM)


@dataclass
class Shim:
    """The running shim and the certificates of its clients."""

    url: str
    keys: pki.Pki

    def client(self, identity: pki.ClientIdentity) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.keys.ca.cert))
        pair = self.keys.client(identity)
        context.load_cert_chain(str(pair.cert), str(pair.key))
        return context


async def _healthy(_: web.Request) -> web.Response:
    return web.Response(text="ok")


@pytest_asyncio.fixture(scope="module")
async def shim(node: Node, shim_binary: Path) -> AsyncIterator[Shim]:
    """The shim in front of a kubelet API application that has only /healthz of its own."""
    keys = pki.Pki(node.root / "pki")
    serving = keys.server("kubelet", "devcluster", dns=["localhost"], ips=["127.0.0.1"])
    options = streams.ShimOptions(
        binary=shim_binary,
        listen="127.0.0.1:0",
        cert=serving.cert,
        key=serving.key,
        client_ca=keys.ensure_ca().cert,
        backend="",  # the application's loopback address, once it has one
        log_file=node.root / "kubelet-streams.log",
        users=[pki.APISERVER_TO_KUBELET.user],
    )
    kubelet_api = web.Application()
    kubelet_api.router.add_get("/healthz", _healthy)
    async with streams.serving_kubelet_api(kubelet_api, node.kubelet, options) as (host, port):
        yield Shim(f"https://{host}:{port}", keys)


async def _ws_exec(
    url: str, client: ssl.SSLContext, command: Sequence[str]
) -> tuple[str, str, dict[str, Any]]:
    """Exec as the Python client does: v4 WebSocket, one byte of channel before each frame."""
    query = [*(("command", part) for part in command), ("output", "1"), ("error", "1")]
    received = {1: b"", 2: b"", 3: b""}
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(url, params=query, protocols=(V4,), ssl=client) as ws,
    ):
        async for message in ws:
            if message.type == aiohttp.WSMsgType.BINARY and message.data:
                received[message.data[0]] += message.data[1:]
    return received[1].decode(), received[2].decode(), json.loads(received[3])


async def test_the_shim_runs_a_websocket_exec_in_the_pod(shim: Shim) -> None:
    url = f"{shim.url}/exec/default/{POD}/main"
    client = shim.client(pki.APISERVER_TO_KUBELET)
    stdout, stderr, status = await _ws_exec(url, client, ["sh", "-c", "hostname; /bin/pwd"])
    assert (stdout, stderr, status["status"]) == (f"{POD}\n{WORKDIR}\n", "", "Success")

    stdout, stderr, status = await _ws_exec(url, client, ["sh", "-c", "echo oops >&2; exit 3"])
    assert (stdout, stderr, status["reason"]) == ("", "oops\n", "NonZeroExitCode")
    # metav1.StatusCause writes its type as "reason".
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]


@pytest.mark.parametrize(
    ("path", "identity", "status"),
    [
        pytest.param(
            f"/exec/default/{POD}/ghost", pki.APISERVER_TO_KUBELET, 404, id="no-such-container"
        ),
        pytest.param(f"/exec/default/{POD}/main", pki.SCHEDULER, 403, id="not-the-api-server"),
    ],
)
async def test_the_shim_refuses_before_upgrading(
    shim: Shim, path: str, identity: pki.ClientIdentity, status: int
) -> None:
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await _ws_exec(f"{shim.url}{path}", shim.client(identity), ["true"])
    assert refused.value.status == status


async def test_only_the_kubelet_api_reaches_the_kubelet_application(shim: Shim) -> None:
    """Health passes; the routes that answer the shim are not found from outside (the API
    server's nodes/proxy relays any path here): an exec target holds a container's Secrets."""
    client = shim.client(pki.APISERVER_TO_KUBELET)
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{shim.url}/healthz", ssl=client) as r:
            assert (r.status, await r.text()) == (200, "ok")
        exec_target = f"{shim.url}/streams/exec-target/default/{POD}/main"
        async with http.get(exec_target, ssl=client) as r:
            assert (r.status, await r.text()) == (404, "404 page not found\n")
