"""SQLite persistence: objects, resourceVersions, uids and watch history survive a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from devcluster.server import DevCluster
from tests.devcluster.conftest import api_client


def _configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": name},
    }


async def _events_after(core: client.CoreV1Api, rv: str, count: int) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    stream = watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=10
    )
    async with stream:
        async for event in stream:
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == count:
                break
    return seen


async def test_restart_keeps_objects_and_resumes_watches(tmp_path: Path) -> None:
    cluster = DevCluster(tmp_path)
    await cluster.start()
    api = await api_client(cluster)
    core = client.CoreV1Api(api)
    first = await core.create_namespaced_config_map("default", _configmap("before"))
    rv = first.metadata.resource_version
    await core.create_namespaced_config_map("default", _configmap("also-before"))
    await core.delete_namespaced_config_map("before", "default")
    await api.close()
    port = cluster.port
    await cluster.stop()

    restarted = DevCluster(tmp_path, port)
    await restarted.start()
    try:
        api = await api_client(restarted)
        core = client.CoreV1Api(api)
        kept = await core.read_namespaced_config_map("also-before", "default")
        assert int(kept.metadata.resource_version) > int(rv)
        await core.create_namespaced_config_map("default", _configmap("after"))
        events = await _events_after(core, rv, 3)
        assert events == [("ADDED", "also-before"), ("DELETED", "before"), ("ADDED", "after")]
        again = await core.create_namespaced_config_map("default", _configmap("later"))
        assert int(again.metadata.resource_version) > int(kept.metadata.resource_version)
        namespaces = {n.metadata.name for n in (await core.list_namespace()).items}
        assert {"default", "kube-system"} <= namespaces
        await api.close()
    finally:
        await restarted.stop()


async def test_uids_survive_restart(tmp_path: Path) -> None:
    async with DevCluster(tmp_path) as cluster:
        api = await api_client(cluster)
        created = await client.CoreV1Api(api).create_namespaced_config_map(
            "default", _configmap("x")
        )
        await api.close()
    async with DevCluster(tmp_path) as cluster:
        api = await api_client(cluster)
        read = await client.CoreV1Api(api).read_namespaced_config_map("x", "default")
        await api.close()
    assert read.metadata.uid == created.metadata.uid
    assert read.metadata.resource_version == created.metadata.resource_version


async def test_expired_resource_version_gets_410_then_relist_works(tmp_path: Path) -> None:
    async with DevCluster(tmp_path, history_limit=5) as cluster:
        api = await api_client(cluster)
        core = client.CoreV1Api(api)
        old = await core.create_namespaced_config_map("default", _configmap("c0"))
        for index in range(1, 12):
            await core.create_namespaced_config_map("default", _configmap(f"c{index}"))
        with pytest.raises(ApiException) as caught:
            await _events_after(core, old.metadata.resource_version, 1)
        assert caught.value.status == 410
        assert "Expired" in str(caught.value.reason)
        # A client recovers as client-go's reflector does: list, then watch from the list.
        listed = await core.list_namespaced_config_map("default")
        assert len(listed.items) == 12
        await core.create_namespaced_config_map("default", _configmap("fresh"))
        assert await _events_after(core, listed.metadata.resource_version, 1) == [
            ("ADDED", "fresh")
        ]
        await api.close()
