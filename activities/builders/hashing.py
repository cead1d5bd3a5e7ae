"""The spec hash behind `upgradeStrategy: Recreate`.

The head pod carries the hash of the spec it was built from; when the current spec hashes
differently, the cluster's pods are recreated. Fields that change without anyone wanting new
pods are left out: scaling fields the autoscaler writes (replicas, min/max, workersToDelete),
tolerations and scheduling gates that Kueue injects, and the strategy itself (C24 in
docs/kuberay-parity.md; `util.go` GenerateHashWithoutReplicasAndWorkersToDelete).

The hash must be equal in every worker process and across restarts, so it is computed from a
canonical JSON form (sorted keys, no whitespace, no nulls), never from Python's `hash()`.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from crds.raycluster import RayClusterSpec

_POD_FIELDS_LEFT_OUT = ("tolerations", "schedulingGates")
_GROUP_FIELDS_LEFT_OUT = ("replicas", "minReplicas", "maxReplicas")


def recreate_hash(spec: RayClusterSpec) -> str:
    """The `ray.io/upgrade-strategy-recreate-hash` value for a cluster spec."""
    data = spec.to_json_dict()
    data.pop("upgradeStrategy", None)
    _drop_pod_fields(data.get("headGroupSpec") or {})
    for group in data.get("workerGroupSpecs") or []:
        for field in _GROUP_FIELDS_LEFT_OUT:
            group.pop(field, None)
        scale = group.get("scaleStrategy")
        if isinstance(scale, dict):
            scale.pop("workersToDelete", None)
            if not scale:
                del group["scaleStrategy"]
        _drop_pod_fields(group)
    return json_hash(data)


def _drop_pod_fields(group: dict[str, Any]) -> None:
    pod_spec = (group.get("template") or {}).get("spec")
    if isinstance(pod_spec, dict):
        for field in _POD_FIELDS_LEFT_OUT:
            pod_spec.pop(field, None)


def json_hash(data: Any) -> str:
    """SHA-1 of the canonical JSON form, in base32 (hex alphabet), like KubeRay's hashes."""
    canonical = json.dumps(
        _without_nulls(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    digest = hashlib.sha1(canonical.encode(), usedforsecurity=False).digest()
    return base64.b32hexencode(digest).decode()


def _without_nulls(data: Any) -> Any:
    # An explicit null and an absent field mean the same to the API server.
    if isinstance(data, dict):
        return {key: _without_nulls(value) for key, value in data.items() if value is not None}
    if isinstance(data, list):
        return [_without_nulls(item) for item in data]
    return data
