"""`get_same`: the object a workflow is for, never its namesake re-created after a delete."""

from __future__ import annotations

from activities.kube import client as kube
from activities.kube.client import KubeClient


def configmap(name: str) -> kube.JSON:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def test_only_the_object_with_the_known_uid_is_returned(client: KubeClient) -> None:
    first = await client.create(kube.CONFIGMAPS, "default", configmap("same-name"))
    uid = first["metadata"]["uid"]
    found = await client.get_same(kube.CONFIGMAPS, "default", "same-name", uid)
    assert found is not None and found["metadata"]["uid"] == uid

    await client.delete(kube.CONFIGMAPS, "default", "same-name")
    assert await client.get_same(kube.CONFIGMAPS, "default", "same-name", uid) is None

    again = await client.create(kube.CONFIGMAPS, "default", configmap("same-name"))
    assert again["metadata"]["uid"] != uid
    assert await client.get_same(kube.CONFIGMAPS, "default", "same-name", uid) is None
