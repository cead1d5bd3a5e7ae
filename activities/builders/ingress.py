"""The head's Ingress (`headGroupSpec.enableIngress`, `ingressOptions`), as KubeRay v1.7 builds it.

One rule to the head Service's dashboard port, at `ingressOptions.path` (default `/`) with its
`pathType` (default `Prefix`) and `host`, `ingressOptions.tls` as given. Every annotation of
the RayCluster is copied onto it — KubeRay's generic way to configure an Ingress controller —
except `kubernetes.io/ingress.class`, which becomes `spec.ingressClassName` instead.
"""

from __future__ import annotations

import copy

from activities.builders import names
from activities.builders.cluster_services import service_ports
from crds import constants as k
from crds.common import JSONObject
from crds.enums import IngressPathType, RayNodeType
from crds.raycluster import RayCluster

CLASS_ANNOTATION = "kubernetes.io/ingress.class"


def wants_ingress(cluster: RayCluster) -> bool:
    """Whether the spec asks for the head's Ingress."""
    return cluster.spec.head_group_spec.enable_ingress is True


def ingress_name(cluster_name: str) -> str:
    """`<cluster>-head-ingress`, clipped like KubeRay's generated names."""
    return names.check_name(f"{cluster_name}-{RayNodeType.HEAD.value}-ingress")


def build_head_ingress(cluster: RayCluster) -> JSONObject:
    """The Ingress to the head's dashboard."""
    options = cluster.spec.head_group_spec.ingress_options
    path_type = (options.path_type if options else None) or IngressPathType.PREFIX
    port = service_ports(cluster).get(k.PORT_NAME_DASHBOARD, k.PORT_DASHBOARD)
    backend = {
        "service": {
            "name": names.head_service_name(cluster.name, cluster.spec),
            "port": {"number": port},
        }
    }
    rule: JSONObject = {
        "http": {
            "paths": [
                {
                    "path": (options.path if options else None) or "/",
                    "pathType": str(path_type),
                    "backend": backend,
                }
            ]
        }
    }
    if options and options.host:
        rule["host"] = options.host
    spec: JSONObject = {"rules": [rule]}
    if options and options.tls:
        spec["tls"] = copy.deepcopy(options.tls)
    annotations = dict(cluster.metadata.annotations or {})
    class_name = annotations.pop(CLASS_ANNOTATION, None)
    if class_name is not None:
        spec["ingressClassName"] = class_name
    labels = names.rbac_labels(cluster.name) | {
        k.LABEL_IDENTIFIER: names.identifier(cluster.name, RayNodeType.HEAD)
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": ingress_name(cluster.name),
            "namespace": cluster.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [names.owner_reference(cluster)],
        },
        "spec": spec,
    }


def adopt_class(existing: JSONObject, desired: JSONObject) -> JSONObject:
    """`desired`, taking the live Ingress's class when the RayCluster names none.

    The DefaultIngressClass admission plugin may have set one; dropping it on every pass would
    fight the API server (KubeRay adopts it too).
    """
    live = (existing.get("spec") or {}).get("ingressClassName")
    if "ingressClassName" in desired["spec"] or live is None:
        return desired
    return {**desired, "spec": {**desired["spec"], "ingressClassName": live}}


def ingress_needs_update(existing: JSONObject, desired: JSONObject) -> bool:
    """Whether the live Ingress's labels, annotations or spec differ from the desired ones."""
    meta = existing.get("metadata") or {}
    want = adopt_class(existing, desired)
    return (
        (meta.get("labels") or {}) != want["metadata"]["labels"]
        or (meta.get("annotations") or {}) != want["metadata"]["annotations"]
        or _spec(existing.get("spec") or {}) != _spec(want["spec"])
    )


def _spec(spec: JSONObject) -> JSONObject:
    """An Ingress spec without the empty fields the API server leaves out."""
    return {key: value for key, value in spec.items() if value not in (None, [], {})}
