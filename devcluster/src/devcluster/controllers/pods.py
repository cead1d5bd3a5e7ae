"""Pods as workload controllers see them: built from a template, counted by their state.

Jobs, ReplicaSets and StatefulSets all stamp pods out of a `spec.template` with extra labels
and a controller reference, and all count them the same way (active, ready, finished), so
those rules live here once. Everything is pure.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

JsonObject = dict[str, Any]
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def from_template(
    template: JsonObject, owner_ref: JsonObject, labels: dict[str, str], **meta: Any
) -> JsonObject:
    """Return a pod body from a pod template, with extra labels and metadata fields."""
    template_meta = template.get("metadata") or {}
    metadata: JsonObject = {
        "labels": {**(template_meta.get("labels") or {}), **labels},
        "ownerReferences": [owner_ref],
        **meta,
    }
    if annotations := template_meta.get("annotations"):
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def template_hash(template: JsonObject, collisions: int = 0) -> str:
    """Return a short stable hash of a pod template, spelt like `pod-template-hash` values."""
    canonical = json.dumps([template, collisions], sort_keys=True, separators=(",", ":"))
    digest = int.from_bytes(hashlib.sha256(canonical.encode()).digest()[:8], "big")
    out = ""
    for _ in range(10):
        digest, index = divmod(digest, len(_SAFE_ALPHABET))
        out += _SAFE_ALPHABET[index]
    return out


def phase(pod: JsonObject) -> str:
    """Return the pod's phase (Pending before the kubelet writes one)."""
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_ready(pod: JsonObject) -> bool:
    """Return whether the kubelet reports the pod Ready."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def is_deleting(pod: JsonObject) -> bool:
    """Return whether the pod has been asked to go."""
    return bool(pod["metadata"].get("deletionTimestamp"))


def is_active(pod: JsonObject) -> bool:
    """Return whether a pod still counts toward its controller: not finished, not deleting."""
    return phase(pod) not in ("Succeeded", "Failed") and not is_deleting(pod)


def restarts(pod: JsonObject) -> int:
    """Return how many times the pod's containers have restarted."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def creation_order(pod: JsonObject) -> tuple[str, str]:
    """Sort key: oldest first, by creation time then name."""
    meta = pod["metadata"]
    return str(meta.get("creationTimestamp", "")), str(meta.get("name", ""))
