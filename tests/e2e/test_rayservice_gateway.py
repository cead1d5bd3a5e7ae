"""devcluster's Gateway data plane: HTTPRoute weights split real HTTP traffic on loopback.

Two local HTTP servers stand behind two selector-less Services (their EndpointSlices written
by hand, as for any external backend); the route's weights decide which one answers. Fast:
no Ray, no kubelet.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest_asyncio
from aiohttp import web

from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeError
from devcluster.networking.gateway import (
    BACKEND_HEADER,
    LISTENER_PORTS_ANNOTATION,
    GatewayDataPlane,
)
from devcluster.server import DevCluster
from kuberay_temporal.stand_in_crds import gateway_api_crds
from tests.eventually import eventually

CRDS = kube.Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)


@pytest_asyncio.fixture
async def client(tmp_path: Path) -> AsyncIterator[KubeClient]:
    async with DevCluster(tmp_path, controllers=[GatewayDataPlane()]) as cluster:
        client = await kube.connect(str(cluster.kubeconfig_path))
        for crd in gateway_api_crds():
            await client.create(CRDS, None, crd)
        await eventually(lambda: _served(client), within=10, message="the Gateway API being served")
        yield client
        await client.close()


async def _served(client: KubeClient) -> bool:
    try:
        await client.list_all(kube.HTTPROUTES, "default")
    except KubeError:  # not served yet
        return False
    return True


@pytest_asyncio.fixture
async def backends() -> AsyncIterator[dict[str, int]]:
    """Two HTTP servers on loopback, each answering with its own name."""
    runners, ports = [], {}
    for name in ("blue", "green"):
        app = web.Application()
        app.router.add_get("/{tail:.*}", lambda r, n=name: web.Response(text=f"{n} {r.path}"))
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ports[name] = runner.addresses[0][1]
        runners.append(runner)
    yield ports
    for runner in runners:
        await runner.cleanup()


async def backend_service(client: KubeClient, name: str, port: int) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-serve-svc"},
        "spec": {"ports": [{"name": "serve", "port": 8000}]},
    }
    await client.create(kube.SERVICES, "default", service)
    endpoints = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{name}-serve-svc-x",
            "labels": {"kubernetes.io/service-name": f"{name}-serve-svc"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}],
        "ports": [{"name": "serve", "port": port}],
    }
    await client.create(kube.ENDPOINT_SLICES, "default", endpoints)


def route(weights: dict[str, int]) -> dict[str, Any]:
    refs = [{"name": f"{n}-serve-svc", "port": 8000, "weight": w} for n, w in weights.items()]
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "svc-httproute"},
        "spec": {
            "parentRefs": [{"name": "svc-gateway"}],
            "rules": [
                {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": refs}
            ],
        },
    }


async def split(base: str, count: int) -> Counter[str]:
    seen: Counter[str] = Counter()
    async with httpx.AsyncClient(base_url=base) as http:
        for _ in range(count):
            response = await http.get("/hello")
            assert response.status_code == 200, response.text
            seen[response.headers[BACKEND_HEADER]] += 1
            assert response.text.endswith(" /hello")
    return seen


async def test_route_weights_split_traffic_and_statuses_are_written(
    client: KubeClient, backends: dict[str, int]
) -> None:
    for name, port in backends.items():
        await backend_service(client, name, port)
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "svc-gateway"},
        "spec": {
            "gatewayClassName": "any",
            "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
        },
    }
    await client.create(kube.GATEWAYS, "default", gateway)
    await client.create(kube.HTTPROUTES, "default", route({"blue": 100, "green": 0}))
    stored = await eventually(
        lambda: _annotated(client), within=10, message="the listener port annotation"
    )
    port = json.loads(stored["metadata"]["annotations"][LISTENER_PORTS_ANNOTATION])["http"]
    base = f"http://127.0.0.1:{port}"
    assert await split(base, 20) == Counter({"blue-serve-svc": 20})

    existing = await client.get(kube.HTTPROUTES, "default", "svc-httproute")
    await client.request(
        "PUT",
        kube.HTTPROUTES.path("default", "svc-httproute"),
        body={**existing, "spec": route({"blue": 50, "green": 50})["spec"]},
    )
    seen = await eventually(lambda: _both(base), within=10, message="a 50/50 split")
    assert 40 <= seen["blue-serve-svc"] <= 160, seen

    statuses = await eventually(lambda: _ready(client), within=10, message="statuses")
    assert statuses


async def _annotated(client: KubeClient) -> dict[str, Any] | None:
    found = await client.get(kube.GATEWAYS, "default", "svc-gateway")
    annotations = found["metadata"].get("annotations") or {}
    return found if LISTENER_PORTS_ANNOTATION in annotations else None


async def _both(base: str) -> Counter[str] | None:
    seen = await split(base, 200)
    return seen if len(seen) == 2 else None


async def _ready(client: KubeClient) -> bool:
    gateway = await client.get(kube.GATEWAYS, "default", "svc-gateway")
    found = await client.get(kube.HTTPROUTES, "default", "svc-httproute")
    conditions = {c["type"]: c["status"] for c in (gateway.get("status") or {}).get("conditions")}
    parents = (found.get("status") or {}).get("parents") or [{}]
    route_conditions = {c["type"]: c["status"] for c in parents[0].get("conditions") or []}
    return conditions == {"Accepted": "True", "Programmed": "True"} and route_conditions == {
        "Accepted": "True",
        "ResolvedRefs": "True",
    }
