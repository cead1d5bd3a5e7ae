"""The defaults Kubernetes declares inside the objects our CRDs keep verbatim.

Pod templates, Services and env vars are `x-kubernetes-preserve-unknown-fields` objects in our
CRDs (`crds.manifests` says why). Kubernetes' own API types declare a few defaults inside them
(`+default` in k8s.io/api: a port's `protocol: TCP`, a reference's `name: ""`, a gRPC probe's
`service: ""`…), and a CRD that inlines those types, as KubeRay's do, makes the API server
write them into the stored custom resource. Without them a manifest would be stored
differently under our CRDs than under KubeRay's: what `kubectl get -o yaml` shows, and what
KubeRay reads (and hashes) if it ever takes over CRs we stored, would not match.

So each such object gets a skeleton: only the path down to each default, every node still
preserving unknown fields. A skeleton is written here as nested Python values: a dict is an
object, a one-item list an array of that item, and any other value a defaulted leaf.
`schema` turns one into structural schema nodes. Declaring a path also makes the API server
drop a `null` written there, as it does under KubeRay's fully typed schemas.
"""

from __future__ import annotations

from typing import Any

from crds.common import JSONObject

_PRESERVE = "x-kubernetes-preserve-unknown-fields"

_NAMED = {"name": ""}
"""LocalObjectReference and the key selectors and env sources built on it."""

ENV_VAR_SOURCE = {
    "configMapKeyRef": _NAMED,
    "secretKeyRef": _NAMED,
    "fileKeyRef": {"optional": False},
}
ENV_VAR = {"valueFrom": ENV_VAR_SOURCE}
ENV_FROM_SOURCE = {"configMapRef": _NAMED, "secretRef": _NAMED}
_PORT = {"protocol": "TCP"}
_PROBE = {"grpc": {"service": ""}}
_CONTAINER = {
    "env": [ENV_VAR],
    "envFrom": [ENV_FROM_SOURCE],
    "ports": [_PORT],
    "livenessProbe": _PROBE,
    "readinessProbe": _PROBE,
    "startupProbe": _PROBE,
}
_SECRET_REF = {"secretRef": _NAMED}
_VOLUME = {
    "azureDisk": {"fsType": "ext4", "readOnly": False},
    "cephfs": _SECRET_REF,
    "cinder": _SECRET_REF,
    "configMap": _NAMED,
    "csi": {"nodePublishSecretRef": _NAMED},
    "flexVolume": _SECRET_REF,
    "iscsi": {"iscsiInterface": "default", **_SECRET_REF},
    "projected": {"sources": [{"configMap": _NAMED, "secret": _NAMED}]},
    "rbd": {"keyring": "/etc/ceph/keyring", "pool": "rbd", "user": "admin", **_SECRET_REF},
    "scaleIO": {"fsType": "xfs", "storageMode": "ThinProvisioned", **_SECRET_REF},
    "storageos": _SECRET_REF,
}
POD_TEMPLATE = {
    "metadata": {},
    "spec": {
        "containers": [_CONTAINER],
        "initContainers": [_CONTAINER],
        "ephemeralContainers": [_CONTAINER],
        "imagePullSecrets": [_NAMED],
        "volumes": [_VOLUME],
    },
}
SERVICE = {"metadata": {}, "spec": {"ports": [_PORT]}}

_TYPES = {bool: "boolean", int: "integer", str: "string"}


def schema(skeleton: Any) -> JSONObject:
    """The structural schema node of a skeleton (see the module docstring).

    Raises:
        TypeError: If a leaf is of no JSON scalar type, or a list does not hold one item.
    """
    if isinstance(skeleton, dict):
        node: JSONObject = {"type": "object", _PRESERVE: True}
        if skeleton:
            node["properties"] = {name: schema(child) for name, child in skeleton.items()}
        return node
    if isinstance(skeleton, list):
        if len(skeleton) != 1:
            raise TypeError(f"an array skeleton holds exactly one item, not {skeleton!r}")
        return {"type": "array", "items": schema(skeleton[0])}
    if type(skeleton) not in _TYPES:
        raise TypeError(f"no schema type for the default {skeleton!r}")
    return {"type": _TYPES[type(skeleton)], "default": skeleton}
