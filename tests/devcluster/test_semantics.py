"""Kubernetes API semantics through kubernetes_asyncio: metadata, concurrency, deletion."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from tests.eventually import eventually

MERGE = "application/merge-patch+json"


def _status(err: ApiException) -> dict[str, Any]:
    return json.loads(err.body)


def _configmap(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **meta},
        "data": {"a": "1"},
    }


async def _exists(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    try:
        await core.read_namespaced_config_map(name, namespace)
    except ApiException as err:
        assert err.status == 404
        return False
    return True


async def test_create_sets_server_metadata_and_one_monotonic_rv(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    first = await core.create_namespaced_config_map(namespace, _configmap("one"))
    second = await core.create_namespaced_config_map(namespace, _configmap("", generateName="gen-"))
    assert first.metadata.uid and first.metadata.creation_timestamp
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    assert second.metadata.name.startswith("gen-") and len(second.metadata.name) == 9
    listed = await core.list_namespaced_config_map(namespace)
    assert int(listed.metadata.resource_version) >= int(second.metadata.resource_version)


async def test_stale_update_is_refused_with_409(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    created = await core.create_namespaced_config_map(namespace, _configmap("cfg"))
    created.data = {"a": "2"}
    await core.replace_namespaced_config_map("cfg", namespace, created)
    created.data = {"a": "3"}  # still carries the first resourceVersion
    with pytest.raises(ApiException) as caught:
        await core.replace_namespaced_config_map("cfg", namespace, created)
    assert caught.value.status == 409
    body = _status(caught.value)
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on configmaps "cfg": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    with pytest.raises(ApiException) as again:
        await core.create_namespaced_config_map(namespace, _configmap("cfg"))
    assert again.value.status == 409 and _status(again.value)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as missing:
        await core.read_namespaced_config_map("nope", namespace)
    assert _status(missing.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "configmaps"},
        "code": 404,
    }


async def test_generation_counts_spec_changes_not_status_or_metadata(
    api: client.ApiClient, namespace: str, ray_crds: list[str]
) -> None:
    custom = client.CustomObjectsApi(api)
    args = ("ray.io", "v1", namespace, "rayjobs")
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "job"},
        "spec": {"entrypoint": "python -c 1"},
        "status": {"jobStatus": "ignored"},
    }
    created = await custom.create_namespaced_custom_object(*args, body)
    assert created["metadata"]["generation"] == 1 and "status" not in created
    patched = await custom.patch_namespaced_custom_object_status(
        *args, "job", {"status": {"jobStatus": "RUNNING"}}, _content_type=MERGE
    )
    assert patched["metadata"]["generation"] == 1 and patched["status"]["jobStatus"] == "RUNNING"
    labelled = await custom.patch_namespaced_custom_object(
        *args, "job", {"metadata": {"labels": {"a": "b"}}}, _content_type=MERGE
    )
    assert labelled["metadata"]["generation"] == 1
    changed = await custom.patch_namespaced_custom_object(
        *args, "job", {"spec": {"entrypoint": "python -c 2"}}, _content_type=MERGE
    )
    assert changed["metadata"]["generation"] == 2
    assert changed["status"]["jobStatus"] == "RUNNING"  # a spec write cannot touch status


async def test_schema_type_errors_are_422_with_causes(
    api: client.ApiClient, namespace: str, ray_crds: list[str]
) -> None:
    custom = client.CustomObjectsApi(api)
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "bad"},
        "spec": {"entrypoint": 7, "suspend": "yes"},
    }
    with pytest.raises(ApiException) as caught:
        await custom.create_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", body)
    status = _status(caught.value)
    assert caught.value.status == 422 and status["reason"] == "Invalid"
    assert status["message"].startswith('RayJob.ray.io "bad" is invalid: [')
    fields = {c["field"]: c for c in status["details"]["causes"]}
    assert fields["spec.entrypoint"]["message"] == (
        'Invalid value: "integer": spec.entrypoint in body must be of type string: "integer"'
    )
    assert fields["spec.suspend"]["reason"] == "FieldValueInvalid"


async def test_finalizer_holds_deletion_until_removed(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_config_map(
        namespace, _configmap("held", finalizers=["example.com/hold"])
    )
    await core.delete_namespaced_config_map("held", namespace)
    held = await core.read_namespaced_config_map("held", namespace)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == ["example.com/hold"]
    with pytest.raises(ApiException) as caught:
        await core.patch_namespaced_config_map(
            "held", namespace, {"metadata": {"finalizers": ["example.com/hold", "x.io/new"]}}
        )
    assert caught.value.status == 422
    await core.patch_namespaced_config_map(
        "held", namespace, [{"op": "remove", "path": "/metadata/finalizers"}]
    )
    assert not await _exists(core, namespace, "held")


def _owned(name: str, owner: Any, block: bool = False) -> dict[str, Any]:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": block,
    }
    return _configmap(name, ownerReferences=[ref])


@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
async def test_owner_deletion_propagates(
    api: client.ApiClient, namespace: str, policy: str
) -> None:
    core = client.CoreV1Api(api)
    owner = await core.create_namespaced_config_map(namespace, _configmap("owner"))
    await core.create_namespaced_config_map(namespace, _owned("child", owner, block=True))
    grandchild_owner = await core.read_namespaced_config_map("child", namespace)
    await core.create_namespaced_config_map(namespace, _owned("grandchild", grandchild_owner))
    await core.delete_namespaced_config_map("owner", namespace, propagation_policy=policy)
    await eventually(lambda: _gone(core, namespace, "owner"), message="owner deleted")
    if policy == "Orphan":
        child = await core.read_namespaced_config_map("child", namespace)
        assert child.metadata.owner_references is None
        assert await _exists(core, namespace, "grandchild")
    else:
        await eventually(
            lambda: _gone(core, namespace, "grandchild"), message="dependents collected"
        )
        assert not await _exists(core, namespace, "child")


async def _gone(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    return not await _exists(core, namespace, name)


async def test_foreground_deletion_waits_for_blocking_dependents(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    owner = await core.create_namespaced_config_map(namespace, _configmap("owner"))
    await core.create_namespaced_config_map(
        namespace,
        {
            **_owned("child", owner, block=True),
            "metadata": {
                **_owned("child", owner, block=True)["metadata"],
                "finalizers": ["example.com/hold"],
            },
        },
    )
    await core.delete_namespaced_config_map("owner", namespace, propagation_policy="Foreground")
    owner_now = await core.read_namespaced_config_map("owner", namespace)
    assert "foregroundDeletion" in owner_now.metadata.finalizers
    await eventually(lambda: _deleting(core, namespace, "child"), message="child marked")
    assert await _exists(core, namespace, "owner")  # held by the blocking child
    await core.patch_namespaced_config_map("child", namespace, {"metadata": {"finalizers": None}})
    await eventually(lambda: _gone(core, namespace, "owner"), message="owner released")


async def _deleting(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    obj = await core.read_namespaced_config_map(name, namespace)
    return obj.metadata.deletion_timestamp is not None


async def test_namespace_deletion_empties_then_removes_it(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespace({"metadata": {"name": "doomed"}})
    await core.create_namespaced_config_map("doomed", _configmap("inside"))
    await core.delete_namespace("doomed")

    async def namespace_gone() -> bool:
        try:
            await core.read_namespace("doomed")
        except ApiException as err:
            return err.status == 404
        return False

    await eventually(namespace_gone, message="namespace removed")
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_config_map("doomed", _configmap("late"))
    assert caught.value.status == 404


async def test_terminating_namespace_refuses_new_objects(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespace({"metadata": {"name": "closing"}})
    await core.create_namespaced_config_map(
        "closing", _configmap("held", finalizers=["example.com/hold"])
    )
    await core.delete_namespace("closing")
    phase = (await core.read_namespace("closing")).status.phase
    assert phase == "Terminating"
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_config_map("closing", _configmap("late"))
    assert caught.value.status == 403 and _status(caught.value)["reason"] == "Forbidden"
    await core.patch_namespaced_config_map("held", "closing", {"metadata": {"finalizers": None}})
    await eventually(lambda: _namespace_gone(core, "closing"), message="namespace removed")


async def _namespace_gone(core: client.CoreV1Api, name: str) -> bool:
    try:
        await core.read_namespace(name)
    except ApiException as err:
        return err.status == 404
    return False


async def test_selectors_and_pagination(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    for index in range(7):
        labels = {"tier": "web" if index % 2 else "db", "idx": str(index)}
        await core.create_namespaced_config_map(namespace, _configmap(f"cm-{index}", labels=labels))
    web = await core.list_namespaced_config_map(namespace, label_selector="tier=web")
    assert [i.metadata.name for i in web.items] == ["cm-1", "cm-3", "cm-5"]
    some = await core.list_namespaced_config_map(namespace, label_selector="idx in (1,2),tier!=web")
    assert [i.metadata.name for i in some.items] == ["cm-2"]
    by_name = await core.list_namespaced_config_map(namespace, field_selector="metadata.name=cm-4")
    assert [i.metadata.name for i in by_name.items] == ["cm-4"]
    pages, token = [], None
    while True:
        page = await core.list_namespaced_config_map(namespace, limit=3, _continue=token)
        pages.append([i.metadata.name for i in page.items])
        token = page.metadata._continue
        if not token:
            break
    assert pages == [["cm-0", "cm-1", "cm-2"], ["cm-3", "cm-4", "cm-5"], ["cm-6"]]
    with pytest.raises(ApiException) as caught:
        await core.list_namespaced_config_map(namespace, field_selector="data.a=1")
    assert caught.value.status == 400


async def test_watch_resumes_sends_bookmarks_and_sees_selector_changes(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    created = await core.create_namespaced_config_map(
        namespace, _configmap("w", labels={"on": "yes"})
    )
    rv = created.metadata.resource_version
    await core.patch_namespaced_config_map("w", namespace, {"data": {"a": "2"}})
    await core.patch_namespaced_config_map("w", namespace, {"metadata": {"labels": {"on": "no"}}})
    seen: list[tuple[str, str]] = []
    stream = watch.Watch().stream(
        core.list_namespaced_config_map,
        namespace,
        label_selector="on=yes",
        resource_version=rv,
        allow_watch_bookmarks=True,
        timeout_seconds=10,
    )
    async with stream:
        async for event in stream:
            kind = event["type"]
            seen.append((kind, event["raw_object"]["metadata"].get("resourceVersion", "")))
            if kind == "BOOKMARK":
                break
    assert [k for k, _ in seen] == ["MODIFIED", "DELETED", "BOOKMARK"]
    assert int(seen[-1][1]) >= int(seen[1][1])
