"""System-owned metadata through an object's life: create, update, status update.

kube-apiserver, not the client, owns uid, creationTimestamp, generation, deletionTimestamp and
(for kinds with a status subresource) who may write status. These pure functions compute the
object to store from the client's object and the stored one; the handler only sequences them.
"""

from __future__ import annotations

import base64
import ipaddress
import secrets
import uuid
from datetime import UTC, datetime
from typing import Any

from devcluster.kinds import Kind
from devcluster.store import copied

JsonObject = dict[str, Any]

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SYSTEM_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
)
_SERVICE_NET = ipaddress.ip_network("10.96.0.0/12")


def now_rfc3339() -> str:
    """Return the current time the way Kubernetes timestamps are written."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generated_name(prefix: str) -> str:
    """Append five random characters, as kube-apiserver's name generator does."""
    return prefix + "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))


def prepare_create(kind: Kind, obj: JsonObject) -> JsonObject:
    """Return the object to store for a create, with system metadata filled in."""
    out = copied(obj)
    out["apiVersion"], out["kind"] = kind.api_version, kind.kind
    meta = out.setdefault("metadata", {})
    for key in (*_SYSTEM_META, "resourceVersion"):
        meta.pop(key, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now_rfc3339()
    if kind.tracks_generation:
        meta["generation"] = 1
    if kind.has_status:
        out.pop("status", None)
    if not kind.group and kind.plural == "pods":
        out["status"] = {"phase": "Pending"}
    return out


def spec_changed(kind: Kind, old: JsonObject, new: JsonObject) -> bool:
    """Return whether a write changes more than metadata (and status, if it is separate)."""
    ignored = {"metadata", "apiVersion", "kind"} | ({"status"} if kind.has_status else set())
    keys = (set(old) | set(new)) - ignored
    return any(old.get(k) != new.get(k) for k in keys)


def prepare_update(kind: Kind, old: JsonObject, new: JsonObject) -> JsonObject:
    """Return the object to store for an update of the main resource."""
    out = copied(new)
    out["apiVersion"], out["kind"] = kind.api_version, kind.kind
    meta = out.setdefault("metadata", {})
    old_meta = old["metadata"]
    for key in _SYSTEM_META:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    if kind.has_status:
        if "status" in old:
            out["status"] = copied(old["status"])
        else:
            out.pop("status", None)
    return out


def bump_generation(kind: Kind, old: JsonObject, new: JsonObject) -> None:
    """Count a spec change in metadata.generation; call after defaulting, so defaults don't."""
    if kind.tracks_generation and spec_changed(kind, old, new):
        new["metadata"]["generation"] = int(old["metadata"].get("generation", 0)) + 1


def prepare_status_update(kind: Kind, old: JsonObject, new: JsonObject) -> JsonObject:
    """Return the object to store for a status write: the old object with the new status."""
    out = copied(old)
    out["apiVersion"], out["kind"] = kind.api_version, kind.kind
    if "status" in new:
        out["status"] = copied(new["status"])
    else:
        out.pop("status", None)
    return out


def mark_deleting(obj: JsonObject, extra_finalizer: str | None) -> JsonObject:
    """Return the object with deletionTimestamp set, the generation bumped, as kube does."""
    out = copied(obj)
    meta = out["metadata"]
    if "deletionTimestamp" not in meta:
        meta["deletionTimestamp"] = now_rfc3339()
        meta["deletionGracePeriodSeconds"] = 0
        if "generation" in meta:
            meta["generation"] = int(meta["generation"]) + 1
    finalizers = list(meta.get("finalizers") or [])
    if extra_finalizer and extra_finalizer not in finalizers:
        finalizers.append(extra_finalizer)
    if finalizers:
        meta["finalizers"] = finalizers
    return out


def apply_defaults(kind: Kind, obj: JsonObject, taken_ips: set[str]) -> None:
    """Fill in the few built-in defaults clients commonly read back."""
    if kind.group or kind.plural not in ("services", "namespaces", "pods", "secrets"):
        return
    if kind.plural == "secrets":
        obj.setdefault("type", "Opaque")
        _merge_string_data(obj)
        return
    spec = obj.setdefault("spec", {})
    if kind.plural == "namespaces":
        spec.setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
    elif kind.plural == "pods":
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        _default_volumes(spec.get("volumes") or [])
    else:
        _default_service(spec, taken_ips)


_FILE_MODE = 0o644  # 420, the mode the API server gives a volume's files by default


def _default_volumes(volumes: list[JsonObject]) -> None:
    """The API server's defaults inside volumes: file modes, a projected token's lifetime."""
    for volume in volumes:
        for kind in ("configMap", "secret", "projected", "downwardAPI"):
            if isinstance(volume.get(kind), dict):
                volume[kind].setdefault("defaultMode", _FILE_MODE)
        for source in (volume.get("projected") or {}).get("sources") or []:
            if isinstance(source.get("serviceAccountToken"), dict):
                source["serviceAccountToken"].setdefault("expirationSeconds", 3600)


def _merge_string_data(secret: JsonObject) -> None:
    """`stringData` is write-only: the API server encodes it into `data` (it wins on a clash)."""
    strings = secret.pop("stringData", None) or {}
    if strings:
        data = secret.setdefault("data", {})
        for key, value in strings.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def _default_service(spec: JsonObject, taken_ips: set[str]) -> None:
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))
    if spec["type"] == "ExternalName" or spec.get("clusterIP") == "None":
        if spec.get("clusterIP") == "None":
            spec["clusterIPs"] = ["None"]
        return
    if not spec.get("clusterIP"):
        for offset in range(10, _SERVICE_NET.num_addresses - 1):
            candidate = str(_SERVICE_NET.network_address + offset)
            if candidate not in taken_ips:
                spec["clusterIP"] = candidate
                break
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
