"""Services inside devcluster: endpoint objects follow pods, `/proxy` and ClusterIPs forward.

Pods here are API objects whose status the test writes (as a kubelet would), with pod IP
127.0.0.1 and a container port where a local aiohttp server listens, so every forwarded byte
stays on loopback.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from kubernetes_asyncio import client

from devcluster.networking import hosts_path
from devcluster.networking.service_proxy import ServiceProxy
from devcluster.server import DevCluster
from tests.devcluster.conftest import Kubectl, api_client
from tests.eventually import eventually

JsonObject = dict[str, Any]


@pytest_asyncio.fixture
async def backend() -> AsyncIterator[int]:
    """A local HTTP server that echoes what reached it."""

    async def echo(request: web.Request) -> web.Response:
        body = {
            "method": request.method,
            "path": request.path,
            "query": request.query_string,
            "body": (await request.read()).decode(),
            "header": request.headers.get("X-Test", ""),
        }
        return web.json_response(body, status=201 if request.method == "POST" else 200)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield runner.addresses[0][1]
    await runner.cleanup()


def pod_body(name: str, port: int) -> JsonObject:
    container = {"name": "c", "image": "x", "ports": [{"name": "dashboard", "containerPort": port}]}
    return {
        "metadata": {"name": name, "labels": {"app": "head"}},
        "spec": {"containers": [container]},
    }


def service_body(name: str, **spec: Any) -> JsonObject:
    return {
        "metadata": {"name": name},
        "spec": {
            "selector": {"app": "head"},
            "ports": [{"name": "dashboard", "port": 8265, "targetPort": "dashboard"}],
            **spec,
        },
    }


async def set_ready(core: client.CoreV1Api, namespace: str, name: str, ready: bool) -> None:
    status = {
        "phase": "Running",
        "podIP": "127.0.0.1",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    await core.patch_namespaced_pod_status(name, namespace, {"status": status})


async def slice_conditions(api: client.ApiClient, namespace: str, service: str) -> list[bool]:
    discovery = client.DiscoveryV1Api(api)
    found = await discovery.list_namespaced_endpoint_slice(
        namespace, label_selector=f"kubernetes.io/service-name={service}"
    )
    return [e.conditions.ready for s in found.items for e in s.endpoints or []]


async def test_readiness_flips_endpoint_slice_and_endpoints(
    api: client.ApiClient, namespace: str, backend: int, kubectl: Kubectl
) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_service(namespace, service_body("head-svc"))
    await core.create_namespaced_pod(namespace, pod_body("head", backend))
    await set_ready(core, namespace, "head", False)
    assert await eventually(lambda: slice_conditions(api, namespace, "head-svc")) == [False]
    await set_ready(core, namespace, "head", True)
    await eventually(lambda: _equal(slice_conditions(api, namespace, "head-svc"), [True]))
    out = json.loads(await kubectl.ok("get", "endpointslices", "-n", namespace, "-o", "json"))
    [body] = out["items"]
    assert body["ports"] == [{"name": "dashboard", "port": backend, "protocol": "TCP"}]
    assert body["endpoints"][0]["targetRef"]["name"] == "head"
    endpoints = await core.read_namespaced_endpoints("head-svc", namespace)
    assert [a.ip for a in endpoints.subsets[0].addresses] == ["127.0.0.1"]
    await set_ready(core, namespace, "head", False)
    await eventually(lambda: _equal(slice_conditions(api, namespace, "head-svc"), [False]))


async def _equal(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def test_service_proxy_subresource_forwards_requests(
    api: client.ApiClient,
    namespace: str,
    backend: int,
    kubectl: Kubectl,
    shared_cluster: DevCluster,
) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_service(namespace, service_body("dash", clusterIP="None"))
    await core.create_namespaced_pod(namespace, pod_body("head", backend))
    await set_ready(core, namespace, "head", True)
    await eventually(lambda: _equal(slice_conditions(api, namespace, "dash"), [True]))
    base = f"/api/v1/namespaces/{namespace}/services/dash:dashboard/proxy"
    got = json.loads(await kubectl.ok("get", "--raw", f"{base}/api/version?a=1&b=2"))
    assert got == {
        "method": "GET",
        "path": "/api/version",
        "query": "a=1&b=2",
        "body": "",
        "header": "",
    }
    async with aiohttp.ClientSession() as session:
        url = f"{shared_cluster.url}{base}/api/serve/applications/?force=true"
        headers = {"X-Test": "yes"}
        async with session.put(url, json={"applications": []}, headers=headers) as response:
            assert response.status == 200
            put = await response.json()
    assert (put["method"], put["header"], put["query"]) == ("PUT", "yes", "force=true")
    assert json.loads(put["body"]) == {"applications": []}
    pod_base = f"/api/v1/namespaces/{namespace}/pods/head:{backend}/proxy"
    assert json.loads(await kubectl.ok("get", "--raw", f"{pod_base}/x"))["path"] == "/x"


async def test_proxy_without_ready_endpoint_is_503_status(
    api: client.ApiClient, namespace: str, kubectl: Kubectl, shared_cluster: DevCluster
) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_service(namespace, service_body("idle"))
    path = f"/api/v1/namespaces/{namespace}/services/idle:dashboard/proxy/"
    result = await kubectl.run("get", "--raw", path)
    assert result.code != 0 and "no endpoints available" in result.err
    async with aiohttp.ClientSession() as session, session.get(shared_cluster.url + path) as got:
        status = await got.json()
    assert (got.status, status["kind"], status["reason"]) == (503, "Status", "ServiceUnavailable")
    missing = await kubectl.run(
        "get", "--raw", f"/api/v1/namespaces/{namespace}/services/none/proxy/"
    )
    assert missing.code != 0 and "not found" in missing.err


async def test_cluster_ip_listener_forwards_round_robin(tmp_path: Path, backend: int) -> None:
    # Loopback stands in for the bridge: the Service's ClusterIP is a loopback address.
    cluster = DevCluster(tmp_path, controllers=[ServiceProxy(add_addresses=False)])
    await cluster.start()
    api = await api_client(cluster)
    try:
        core = client.CoreV1Api(api)
        spec = {
            "clusterIP": "127.0.0.3",
            "ports": [{"name": "dashboard", "port": 18265, "targetPort": "dashboard"}],
        }
        await core.create_namespaced_service("default", service_body("svc", **spec))
        await core.create_namespaced_pod("default", pod_body("head", backend))
        await set_ready(core, "default", "head", True)
        await eventually(lambda: _equal(slice_conditions(api, "default", "svc"), [True]))

        async def fetch() -> bytes:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.3", 18265)
            except OSError:
                return b""
            writer.write(b"GET /through HTTP/1.0\r\nHost: x\r\n\r\n")
            data = await reader.read()
            writer.close()
            return data

        assert b'"/through"' in await eventually(fetch)
    finally:
        await api.close()
        await cluster.stop()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.3", 18265)
    assert not hosts_path(tmp_path).exists()  # no pod network: no hosts file
