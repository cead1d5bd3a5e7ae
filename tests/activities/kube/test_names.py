"""The Kubernetes client addresses only the object it was asked for, in the namespace asked.

Names often come from a CR. Both HTTP clients normalise `..` in a path, so before this check a
head Service named `../../b/services/victim-head-svc` read namespace `b`'s Service. The client
now refuses any segment that is not a valid name, and a read checks what it got back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web
from kubernetes_asyncio.client import ApiClient, Configuration

from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeInvalid


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("../../b/services/victim-head-svc", id="traversal"),
        pytest.param("..", id="dot-dot"),
        pytest.param(".", id="dot"),
        pytest.param("a/b", id="slash"),
        pytest.param("a%2F..", id="escaped-slash"),
        pytest.param("a?watch=true", id="query"),
        pytest.param("a#b", id="fragment"),
        pytest.param("a b", id="space"),
        pytest.param("-a", id="leading-dash"),
        pytest.param("x" * 254, id="too-long"),
    ],
)
def test_a_path_is_never_built_from_an_invalid_name(name: str) -> None:
    with pytest.raises(KubeInvalid, match="not a valid Kubernetes object name"):
        kube.SERVICES.path("a", name)
    with pytest.raises(KubeInvalid, match="not a valid Kubernetes object name"):
        kube.SERVICES.path(name)
    with pytest.raises(KubeInvalid, match="not a valid Kubernetes object name"):
        kube.RAYJOBS.path("a", "job", name)


@pytest.mark.parametrize(
    "name",
    ["victim-head-svc", "system:controller:job-controller", "demo.17a2b3c4d5e6f7a8", "a_b", "A1"],
)
def test_every_kind_of_real_name_still_makes_a_path(name: str) -> None:
    assert (
        kube.ROLES.path("a", name)
        == f"/apis/rbac.authorization.k8s.io/v1/namespaces/a/roles/{name}"
    )


async def test_a_crafted_name_reads_nothing_in_another_namespace(client: KubeClient) -> None:
    victim = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "victim"}}
    await client.create(kube.NAMESPACES, None, {"metadata": {"name": "b"}})
    await client.create(kube.SECRETS, "b", {**victim, "data": {"auth_token": "c2VjcmV0"}})
    with pytest.raises(KubeInvalid) as raised:
        await client.get_or_none(kube.SECRETS, "default", "../../b/secrets/victim")
    assert "c2VjcmV0" not in str(raised.value)
    with pytest.raises(KubeInvalid):
        await client.delete(kube.SECRETS, "default", "../../b/secrets/victim")
    assert await client.get(kube.SECRETS, "b", "victim")


@pytest_asyncio.fixture
async def rewriting_server(tmp_path: Path) -> AsyncIterator[KubeClient]:
    """An API server (or a proxy in front of one) that answers every read with b/victim."""

    async def answer(_: web.Request) -> web.Response:
        obj = {"kind": "Secret", "metadata": {"namespace": "b", "name": "victim"}, "data": {}}
        return web.json_response(obj)

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    configuration = Configuration(host=f"http://127.0.0.1:{port}")
    client = KubeClient(ApiClient(configuration=configuration))
    try:
        yield client
    finally:
        await client.close()
        await runner.cleanup()


async def test_a_read_refuses_an_object_from_another_namespace(
    rewriting_server: KubeClient,
) -> None:
    with pytest.raises(KubeInvalid, match=r"asked for secrets a/victim.*answered with b/victim"):
        await rewriting_server.get(kube.SECRETS, "a", "victim")
    with pytest.raises(KubeInvalid, match="answered with b/victim"):
        await rewriting_server.get_or_none(kube.SECRETS, "a", "other")
    assert await rewriting_server.get(kube.SECRETS, "b", "victim")
