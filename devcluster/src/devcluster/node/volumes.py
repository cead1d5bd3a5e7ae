"""The node's local-path volume provisioner: a default StorageClass and a PV for each claim.

devcluster's own API server needs no PersistentVolumes: its kubelet maps a
`persistentVolumeClaim` volume to a directory per claim (`STATE/claims/<namespace>/<claim>`,
see `devcluster.kubelet.volumes`). A real control plane has no StorageClass and no
provisioner, so a claim stays Pending and kube-scheduler never places its pod. This module is
what kind's local-path-provisioner is to a real cluster: the node creates a default
StorageClass (`standard`, provisioner `PROVISIONER`, reclaim Delete, binding Immediate) and,
as its own identity `devcluster:volume-provisioner`, follows claims and volumes: for a claim
kube-controller-manager hands to `PROVISIONER` (its PV controller sets the
`volume.kubernetes.io/storage-provisioner` annotation) it creates the PV `pvc-<claim uid>`,
pre-bound to the claim and pointing at the kubelet's directory for it, which the PV controller
then binds; a volume of ours whose claim is gone (Released) is deleted with its directory.

Everything is derived from what the API server holds, so a restarted node provisions the
claims still Pending, and a 409 for a volume or class that exists already is success. Without
`volume_rbac` applied (by whoever starts the node with administrator rights) every request is
refused: that is logged once and claims are left alone until the role appears.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from pathlib import Path
from typing import Any

from devcluster.control_plane.pki import ClientIdentity
from devcluster.node.client import ApiError, Requests
from devcluster.node.gateways import user_cluster_role
from devcluster.node.mirror import Mirror
from devcluster.store import Event

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)
VOLUME_IDENTITY = ClientIdentity("volume-provisioner", "devcluster:volume-provisioner")
PROVISIONER = "devcluster.kuberay-temporal.io/local-path"
STORAGE_CLASS = "standard"
PVCS = "/persistentvolumeclaims"  # the mirror's keys, as devcluster's store keys core objects
PVS = "/persistentvolumes"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
_STORAGE_PROVISIONER = (  # set by the PV controller on a claim it leaves to an external one
    "volume.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-provisioner",
)
_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
_RETRY_FIRST, _RETRY_MAX = 0.5, 5.0


def claims_dir(state_dir: Path) -> Path:
    """Where the node's kubelet keeps claims' directories (the process runtime's `claims`)."""
    return state_dir / "claims"


def claim_path(claims: Path, namespace: str, name: str) -> Path:
    """The directory the kubelet mounts for the claim `namespace/name`."""
    return claims / namespace / name


def volume_rbac() -> list[JsonObject]:
    """The ClusterRole and ClusterRoleBinding the node's volume provisioner needs."""
    name = VOLUME_IDENTITY.user
    read = ["get", "list", "watch"]
    rules = [
        {
            "apiGroups": [""],
            "resources": ["persistentvolumes"],
            "verbs": [*read, "create", "delete"],
        },
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": read},
        {
            "apiGroups": ["storage.k8s.io"],
            "resources": ["storageclasses"],
            "verbs": [*read, "create"],
        },
    ]
    return user_cluster_role(name, rules)


def storage_class() -> JsonObject:
    """The default StorageClass: claims without a class get it, and with it a volume of ours."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS, "annotations": {_DEFAULT_CLASS: "true"}},
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }


def volume_name(claim: JsonObject) -> str:
    """The PV provisioned for a claim, named after its UID as external provisioners do."""
    return f"pvc-{claim['metadata']['uid']}"


def wants_volume(claim: JsonObject) -> bool:
    """Whether a claim waits for a volume from us: handed to `PROVISIONER`, unbound, alive."""
    meta, spec = claim["metadata"], claim.get("spec") or {}
    annotations = meta.get("annotations") or {}
    ours = any(annotations.get(key) == PROVISIONER for key in _STORAGE_PROVISIONER)
    bound = bool(spec.get("volumeName")) or (claim.get("status") or {}).get("phase") == "Bound"
    return ours and not bound and not meta.get("deletionTimestamp") and bool(meta.get("uid"))


def persistent_volume(claim: JsonObject, claims: Path) -> JsonObject:
    """The PV for a claim: its size, modes and class, pre-bound to it, on the kubelet's path."""
    meta, spec = claim["metadata"], claim.get("spec") or {}
    namespace, name = meta["namespace"], meta["name"]
    requests = (spec.get("resources") or {}).get("requests") or {}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume_name(claim), "annotations": {PROVISIONED_BY: PROVISIONER}},
        "spec": {
            "capacity": {"storage": str(requests.get("storage", "1Gi"))},
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "storageClassName": spec.get("storageClassName") or STORAGE_CLASS,
            "persistentVolumeReclaimPolicy": "Delete",
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": namespace,
                "name": name,
                "uid": meta["uid"],
            },
            "hostPath": {
                "path": str(claim_path(claims, namespace, name)),
                "type": "DirectoryOrCreate",
            },
        },
    }


def released(volume: JsonObject) -> bool:
    """Whether a volume is ours, to be deleted, and its claim gone."""
    meta, spec = volume["metadata"], volume.get("spec") or {}
    return (
        (meta.get("annotations") or {}).get(PROVISIONED_BY) == PROVISIONER
        and spec.get("persistentVolumeReclaimPolicy") == "Delete"
        and (volume.get("status") or {}).get("phase") == "Released"
        and not meta.get("deletionTimestamp")
    )


class VolumeProvisioner:
    """Creates the StorageClass, then provisions and deletes volumes as claims come and go."""

    def __init__(self, client: Requests, claims: Path) -> None:
        self.client, self.claims = client, claims
        self._class_ready = False
        self._refusal_logged = False

    async def follow(self, view: Mirror) -> None:
        """Sync on every change of claims or volumes until cancelled; retry what failed."""
        changed = asyncio.Event()

        def listen(event: Event) -> None:
            if event.resource in (PVCS, PVS):
                changed.set()

        view.add_listener(listen)
        delay = _RETRY_FIRST
        try:
            while True:
                changed.clear()
                if await self.sync(view):
                    delay = _RETRY_FIRST
                    await changed.wait()
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), delay)
                delay = min(delay * 2, _RETRY_MAX)
        finally:
            view.remove_listener(listen)

    async def sync(self, view: Mirror) -> bool:
        """One pass over claims and volumes; False when something is worth trying again."""
        done = await self._ensure_class()
        volumes = {v["metadata"]["name"]: v for v in view.objects(PVS)}
        for claim in view.objects(PVCS):
            if wants_volume(claim) and volume_name(claim) not in volumes:
                done = await self._create(claim) and done
        for volume in volumes.values():
            if released(volume):
                done = await self._delete(view, volume) and done
        return done

    async def _ensure_class(self) -> bool:
        if self._class_ready:
            return True
        try:
            await self.client.request(
                "POST", "/apis/storage.k8s.io/v1/storageclasses", storage_class()
            )
        except ApiError as err:
            if err.code != 409:
                return self._failed(f"StorageClass {STORAGE_CLASS}", err)
        self._class_ready = True
        return True

    async def _create(self, claim: JsonObject) -> bool:
        body = persistent_volume(claim, self.claims)
        name, meta = body["metadata"]["name"], claim["metadata"]
        try:
            await self.client.request("POST", "/api/v1/persistentvolumes", body)
        except ApiError as err:
            # 409: created already, by us before a restart or a moment ago.
            return True if err.code == 409 else self._failed(f"PersistentVolume {name}", err)
        log.info("provisioned %s for claim %s/%s", name, meta["namespace"], meta["name"])
        return True

    async def _delete(self, view: Mirror, volume: JsonObject) -> bool:
        name = volume["metadata"]["name"]
        try:
            await self.client.request("DELETE", f"/api/v1/persistentvolumes/{name}")
        except ApiError as err:
            if err.code != 404:
                return self._failed(f"PersistentVolume {name}", err)
        claim_ref = (volume.get("spec") or {}).get("claimRef") or {}
        namespace, claim = str(claim_ref.get("namespace", "")), str(claim_ref.get("name", ""))
        # The directory is the claim's name, not its UID: a new claim of that name keeps it
        # (known only once claims were listed, as they may not be yet after a restart).
        listed = view.synced(PVCS).is_set()
        if namespace and claim and listed and view.get(PVCS, namespace, claim) is None:
            await asyncio.to_thread(_remove, claim_path(self.claims, namespace, claim))
        log.info("deleted %s, released by %s/%s", name, namespace, claim)
        return True

    def _failed(self, what: str, err: ApiError) -> bool:
        """Log a refusal; True when asking again will not help until something changes."""
        if err.code in (401, 403):
            if not self._refusal_logged:
                self._refusal_logged = True
                log.warning(
                    "volume provisioner refused (%s); claims stay Pending until the role "
                    "of devcluster.node.volumes.volume_rbac() is applied",
                    err,
                )
            return False
        log.warning("%s: %s", what, err)
        return not err.retryable


def _remove(path: Path) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError as err:
        log.warning("claim directory %s not removed: %s", path, err)
