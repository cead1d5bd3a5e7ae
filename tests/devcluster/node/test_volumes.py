"""The node's local-path volume provisioner, alone and as the node of a real v1.37.2 API server.

A claim without a class gets the node's default StorageClass (DefaultStorageClass admission),
kube-controller-manager hands it to our provisioner, the node creates a PV pre-bound to it on
the kubelet's directory for the claim, the PV controller binds the two and the scheduler
places the pod; once the claim is deleted its volume goes too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from devcluster.control_plane.processes import ControlPlane
from devcluster.node import NodeAgent
from devcluster.node.client import ApiError
from devcluster.node.mirror import Mirror
from devcluster.node.volumes import (
    PROVISIONED_BY,
    PROVISIONER,
    PVCS,
    PVS,
    STORAGE_CLASS,
    VolumeProvisioner,
    claims_dir,
    persistent_volume,
    released,
    storage_class,
    volume_rbac,
    wants_volume,
)
from tests.devcluster.conftest import Kubectl
from tests.devcluster.node.conftest import get_json, pod_statuses, running_node
from tests.eventually import eventually

JsonObject = dict[str, Any]
pytestmark = pytest.mark.timeout(180)
UID = "0b5e2c52-7f1e-4a55-9c1a-4d1f3e0d2a11"


def claim(**changes: Any) -> JsonObject:
    """A claim kube-controller-manager handed to our provisioner, as the mirror holds it."""
    found: JsonObject = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "data",
            "namespace": "ns",
            "uid": UID,
            "resourceVersion": "7",
            "annotations": {"volume.kubernetes.io/storage-provisioner": PROVISIONER},
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "512Mi"}},
            "storageClassName": STORAGE_CLASS,
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Pending"},
    }
    for key, value in changes.items():
        found[key] = {**found[key], **value}
    return found


def test_the_volume_of_a_claim_is_pre_bound_to_it_on_the_kubelets_directory(
    tmp_path: Path,
) -> None:
    volume = persistent_volume(claim(), tmp_path / "claims")
    assert volume["metadata"] == {
        "name": f"pvc-{UID}",
        "annotations": {PROVISIONED_BY: PROVISIONER},
    }
    assert volume["spec"] == {
        "capacity": {"storage": "512Mi"},
        "accessModes": ["ReadWriteOnce"],
        "volumeMode": "Filesystem",
        "storageClassName": STORAGE_CLASS,
        "persistentVolumeReclaimPolicy": "Delete",
        "claimRef": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": "ns",
            "name": "data",
            "uid": UID,
        },
        "hostPath": {"path": str(tmp_path / "claims" / "ns" / "data"), "type": "DirectoryOrCreate"},
    }
    assert claims_dir(tmp_path) == tmp_path / "claims"  # the process runtime's `claims`


def test_only_unbound_live_claims_handed_to_us_want_a_volume() -> None:
    assert wants_volume(claim())
    beta = {"annotations": {"volume.beta.kubernetes.io/storage-provisioner": PROVISIONER}}
    assert wants_volume(claim(metadata=beta))
    other = {"annotations": {"volume.kubernetes.io/storage-provisioner": "ebs.csi.aws.com"}}
    assert not wants_volume(claim(metadata=other))
    assert not wants_volume(claim(metadata={"annotations": {}}))
    assert not wants_volume(claim(spec={"volumeName": "pv-1"}))
    assert not wants_volume(claim(status={"phase": "Bound"}))
    assert not wants_volume(claim(metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"}))


def test_only_our_released_volumes_are_deleted(tmp_path: Path) -> None:
    volume = persistent_volume(claim(), tmp_path)
    assert not released(volume)
    gone = {**volume, "status": {"phase": "Released"}}
    assert released(gone)
    assert not released({**gone, "metadata": {"name": "pv-x", "annotations": {}}})
    retained = {**gone, "spec": {**gone["spec"], "persistentVolumeReclaimPolicy": "Retain"}}
    assert not released(retained)


def test_the_role_allows_only_what_the_provisioner_does() -> None:
    role, binding = volume_rbac()
    rules = {
        (group, resource): sorted(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert rules == {
        ("", "persistentvolumes"): ["create", "delete", "get", "list", "watch"],
        ("", "persistentvolumeclaims"): ["get", "list", "watch"],
        ("storage.k8s.io", "storageclasses"): ["create", "get", "list", "watch"],
    }
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "User",
            "name": "devcluster:volume-provisioner",
        }
    ]
    assert storage_class()["metadata"]["annotations"] == {
        "storageclass.kubernetes.io/is-default-class": "true"
    }


class FakeApi:
    """Records requests; answers each path with the error queued for it, else `{}`."""

    def __init__(self, errors: Mapping[str, ApiError] | None = None) -> None:
        self.errors = dict(errors or {})
        self.calls: list[tuple[str, str]] = []

    async def request(
        self,
        method: str,
        path: str,
        body: JsonObject | None = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> JsonObject:
        self.calls.append((method, path))
        if path in self.errors:
            raise self.errors[path]
        return {}


async def test_an_existing_class_and_volume_count_as_done_after_a_restart(tmp_path: Path) -> None:
    mirror = Mirror()
    mirror.put(PVCS, claim())
    exists = ApiError(409, "AlreadyExists", "exists")
    api = FakeApi(
        {"/apis/storage.k8s.io/v1/storageclasses": exists, "/api/v1/persistentvolumes": exists}
    )
    provisioner = VolumeProvisioner(api, tmp_path)
    assert await provisioner.sync(mirror)
    mirror.put(PVS, persistent_volume(claim(), tmp_path))
    assert await provisioner.sync(mirror)
    assert api.calls == [
        ("POST", "/apis/storage.k8s.io/v1/storageclasses"),
        ("POST", "/api/v1/persistentvolumes"),
    ]


async def test_a_released_volume_is_deleted_with_its_directory(tmp_path: Path) -> None:
    mirror, api = Mirror(), FakeApi()
    volume = persistent_volume(claim(), tmp_path)
    mirror.replace(PVCS, [])
    mirror.put(PVS, {**volume, "status": {"phase": "Released"}})
    (tmp_path / "ns" / "data").mkdir(parents=True)
    (tmp_path / "ns" / "data" / "gcs.db").write_text("old")
    assert await VolumeProvisioner(api, tmp_path).sync(mirror)
    assert ("DELETE", f"/api/v1/persistentvolumes/pvc-{UID}") in api.calls
    assert not (tmp_path / "ns" / "data").exists()


@pytest.mark.parametrize("claims_listed", [True, False])
async def test_a_directory_stays_while_a_claim_of_its_name_may_use_it(
    tmp_path: Path, claims_listed: bool
) -> None:
    mirror, api = Mirror(), FakeApi()
    volume = persistent_volume(claim(), tmp_path)
    mirror.put(PVS, {**volume, "status": {"phase": "Released"}})
    newer = claim(metadata={"uid": "another"}, spec={"volumeName": "pvc-another"})
    if claims_listed:  # a new claim of the same name; else claims are not listed yet
        mirror.replace(PVCS, [newer])
    (tmp_path / "ns" / "data").mkdir(parents=True)
    assert await VolumeProvisioner(api, tmp_path).sync(mirror)
    assert ("DELETE", f"/api/v1/persistentvolumes/pvc-{UID}") in api.calls
    assert (tmp_path / "ns" / "data").exists()


async def test_without_the_role_claims_are_left_and_the_refusal_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mirror = Mirror()
    mirror.put(PVCS, claim())
    refused = ApiError(403, "Forbidden", "no")
    api = FakeApi(
        {"/apis/storage.k8s.io/v1/storageclasses": refused, "/api/v1/persistentvolumes": refused}
    )
    provisioner = VolumeProvisioner(api, tmp_path)
    with caplog.at_level(logging.WARNING, "devcluster.node.volumes"):
        assert not await provisioner.sync(mirror)
        assert not await provisioner.sync(mirror)
    # Only the provisioner's own: asyncio may log a task an earlier test left to the collector.
    logged = [r for r in caplog.records if r.name == "devcluster.node.volumes"]
    assert len(logged) == 1
    assert "volume_rbac" in logged[0].getMessage()
    assert not (tmp_path / "ns").exists()


@pytest_asyncio.fixture(scope="module")
async def node(
    bridged_control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[NodeAgent]:
    """A node started before its provisioner's role exists, as the tests then apply it."""
    state = tmp_path_factory.mktemp("volume-node")
    async with running_node(bridged_control_plane, state, "simulated") as agent:
        yield agent


async def test_a_claim_without_a_class_is_provisioned_bound_and_deleted_with_its_volume(
    node: NodeAgent, admin: Kubectl, namespace: str
) -> None:
    rbac = {"apiVersion": "v1", "kind": "List", "items": volume_rbac()}
    await admin.ok("apply", "-f", "-", stdin=json.dumps(rbac))

    async def default_class() -> JsonObject | None:
        found = await admin.run("get", "storageclass", STORAGE_CLASS, "-o", "json")
        return json.loads(found.out) if found.code == 0 else None

    created = await eventually(default_class, within=60, message="the node's StorageClass")
    assert created["provisioner"] == PROVISIONER
    assert created["reclaimPolicy"] == "Delete"
    assert created["volumeBindingMode"] == "Immediate"
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "user"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "nginx",
                    "volumeMounts": [{"name": "d", "mountPath": "/d"}],
                }
            ],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    await admin.ok("apply", "-n", namespace, "-f", "-", stdin=json.dumps(pvc))
    await admin.ok("apply", "-n", namespace, "-f", "-", stdin=json.dumps(pod))

    async def bound() -> JsonObject | None:
        found = await get_json(admin, "pvc", "data", "-n", namespace)
        return found if found.get("status", {}).get("phase") == "Bound" else None

    claimed = await eventually(bound, within=60, message="the claim Bound")
    assert claimed["spec"]["storageClassName"] == STORAGE_CLASS
    uid = claimed["metadata"]["uid"]
    assert claimed["spec"]["volumeName"] == f"pvc-{uid}"
    volume = await get_json(admin, "pv", f"pvc-{uid}")
    assert volume["metadata"]["annotations"][PROVISIONED_BY] == PROVISIONER
    assert volume["spec"]["claimRef"]["uid"] == uid
    assert volume["spec"]["capacity"] == {"storage": "1Gi"}
    claim_dir = claims_dir(node.config.state_dir) / namespace / "data"
    assert volume["spec"]["hostPath"]["path"] == str(claim_dir)
    assert volume["status"]["phase"] == "Bound"

    async def running() -> bool:
        return (await pod_statuses(admin, namespace)).get("user") == "Running"

    await eventually(running, within=60, message="the pod Running")
    await admin.ok("delete", "pod", "user", "-n", namespace, "--wait=true", "--timeout=60s")
    await admin.ok("delete", "pvc", "data", "-n", namespace, "--wait=true", "--timeout=60s")

    async def volume_gone() -> bool:
        found = await admin.run("get", "pv", f"pvc-{uid}")
        return found.code != 0 and "NotFound" in found.err

    await eventually(volume_gone, within=60, message="the released volume deleted")
