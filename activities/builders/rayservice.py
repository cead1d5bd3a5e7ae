"""The objects a RayService owns: its RayClusters and the Services that switch between them.

They reproduce what KubeRay's RayService controller builds (`constructRayClusterForRayService`,
`BuildHeadServiceForRayService`, `BuildServeService`), names, labels, hashes and selectors
included, so tools written for KubeRay find them; the Gateway API objects of incremental
upgrades are in `rayservice_gateway`. Pure: a RayService model and a few names in, manifests
and hashes out. The Serve config never leaves the activity that PUTs it; what travels is
`serve_config_hash`.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from typing import Any

import yaml

from activities.builders import names
from activities.builders.cluster_services import (
    MissingServePortError,
    build_head_service,
    is_serving_port,
    service_ports,
)
from activities.builders.hashing import json_hash
from activities.builders.options import DEFAULT_OPTIONS, BuildOptions
from crds import constants as k
from crds import flags
from crds.common import JSONObject
from crds.enums import RayNodeType
from crds.payloads import PayloadLimitError, load_yaml
from crds.raycluster import RayCluster, RayClusterSpec
from crds.rayservice import RayService

ENDPOINT_SLICE_SERVICE_LABEL = "kubernetes.io/service-name"
_GROUP_SCALE_FIELDS = ("replicas", "minReplicas", "maxReplicas")


class ServeConfigError(ValueError):
    """`serveConfigV2` is not a YAML mapping (the message never quotes the config)."""


# --- hashes -----------------------------------------------------------------------------------


def goal_hash(spec: RayClusterSpec, worker_groups: int | None = None) -> str:
    """`ray.io/hash-without-replicas-and-workers-to-delete` of a RayService's cluster spec.

    KubeRay hashes `rayClusterConfig` with `suspend` cleared (Kueue owns it after creation,
    S20) and every worker group's scale fields muted, so the autoscaler never triggers an
    upgrade. With `worker_groups`, the spec is first cut to that many groups: KubeRay's
    partial match that turns appended worker groups into an in-place update (S10).
    """
    data = spec.to_json_dict()
    data.pop("suspend", None)
    groups = data.get("workerGroupSpecs") or []
    if worker_groups is not None:
        groups = groups[:worker_groups]
        data["workerGroupSpecs"] = groups
    for group in groups:
        for field in _GROUP_SCALE_FIELDS:
            group.pop(field, None)
        scale = group.get("scaleStrategy")
        if isinstance(scale, dict):
            scale.pop("workersToDelete", None)
            if not scale:
                del group["scaleStrategy"]
    if not groups:
        data.pop("workerGroupSpecs", None)
    return json_hash(data)


def serve_config_hash(text: str | None) -> str:
    """sha256 of `serveConfigV2` as written ("" when there is none)."""
    return hashlib.sha256(text.encode()).hexdigest() if text else ""


def parse_serve_config(text: str) -> dict[str, Any]:
    """`serveConfigV2` as the JSON document Ray's PUT takes.

    Raises:
        ServeConfigError: If the text is not YAML or not a mapping (no snippet quoted: the
            config may hold secrets in `runtime_env`), or is beyond `crds.payloads` bounds
            (an alias bomb is refused before anything is expanded).
    """
    try:
        data = load_yaml(text)
    except PayloadLimitError as err:
        raise ServeConfigError(f"serveConfigV2 {err}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ServeConfigError(f"serveConfigV2 is not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise ServeConfigError(f"serveConfigV2 must be a YAML mapping, not {type(data).__name__}")
    return data


# --- ownership ----------------------------------------------------------------------------------


def rayservice_owner_reference(service: RayService) -> JSONObject:
    """The controller ownerReference of everything a RayService creates."""
    return names.controller_reference("RayService", service.name, service.metadata.uid)


def originated_labels(service: RayService) -> dict[str, str]:
    """`ray.io/originated-from-cr-name` and `-crd`: how KubeRay marks a RayService's children."""
    return {
        k.LABEL_ORIGINATED_FROM_CR_NAME: service.name,
        k.LABEL_ORIGINATED_FROM_CRD: names.CREATOR_RAYSERVICE,
    }


def is_owned_by(obj: JSONObject, uid: str) -> bool:
    """Whether `obj` names the object of this uid as its controller."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("uid") == uid and ref.get("controller") for ref in refs)


# --- the RayClusters (S2, S11, S13) -------------------------------------------------------------


def cluster_annotations(service: RayService) -> dict[str, str]:
    """The RayService's annotations plus KubeRay's hash, group count and version (S2)."""
    spec = service.spec.ray_cluster_config
    annotations = names.without_last_applied(service.annotations)
    annotations[k.ANNOTATION_HASH_WITHOUT_REPLICAS] = goal_hash(spec)
    annotations[k.ANNOTATION_NUM_WORKER_GROUPS] = str(len(spec.worker_group_specs or []))
    annotations[k.ANNOTATION_KUBERAY_VERSION] = k.KUBERAY_VERSION
    return annotations


def build_service_cluster(
    service: RayService, raw_config: JSONObject, name: str, *, autoscale_from_min: bool = False
) -> JSONObject:
    """RayCluster `name` from `rayClusterConfig` as stored, labelled and owned by the RayService.

    Args:
        service: The RayService (labels, annotations, uid, hash).
        raw_config: `spec.rayClusterConfig` as the API server returned it: copied verbatim so
            no field a newer KubeRay knows is lost on the way.
        name: `<rayservice>-<5 random>`, chosen by the workflow.
        autoscale_from_min: Clear worker `replicas` (incremental upgrades, S13).
    """
    spec = copy.deepcopy(raw_config)
    if autoscale_from_min:
        for group in spec.get("workerGroupSpecs") or []:
            group.pop("replicas", None)
    return {
        "apiVersion": k.API_VERSION,
        "kind": "RayCluster",
        "metadata": {
            "name": name,
            "namespace": service.namespace,
            "labels": {**service.labels, **originated_labels(service)},
            "annotations": cluster_annotations(service),
            "ownerReferences": [rayservice_owner_reference(service)],
        },
        "spec": spec,
    }


def updated_service_cluster(
    service: RayService, raw_config: JSONObject, existing: JSONObject
) -> JSONObject:
    """`existing` with the goal spec and fresh annotations, keeping its `suspend` (S11)."""
    updated = copy.deepcopy(existing)
    spec = copy.deepcopy(raw_config)
    old_spec = existing.get("spec") or {}
    if "suspend" in old_spec:
        spec["suspend"] = old_spec["suspend"]
    else:
        spec.pop("suspend", None)
    updated["spec"] = spec
    meta = updated["metadata"]
    meta["annotations"] = {**(meta.get("annotations") or {}), **cluster_annotations(service)}
    return updated


# --- the Services that switch clusters (S8) -----------------------------------------------------


def head_service_name(service: RayService) -> str:
    """`<rayservice>-head-svc`."""
    return f"{service.name}-head-svc"


def serve_service_name(service: RayService) -> str:
    """The user's `serveService.metadata.name`, else `<rayservice>-serve-svc`."""
    user = (service.spec.serve_service or {}).get("metadata") or {}
    return str(user.get("name") or names.serve_service_name(service.name))


def build_rayservice_head_service(
    service: RayService, cluster: RayCluster, options: BuildOptions = DEFAULT_OPTIONS
) -> JSONObject:
    """The target cluster's head Service, renamed and relabelled for the RayService."""
    built = build_head_service(cluster, options)
    built["metadata"] = {
        "name": head_service_name(service),
        "namespace": service.namespace,
        "labels": {
            **originated_labels(service),
            k.LABEL_NODE_TYPE: RayNodeType.HEAD.value,
            k.LABEL_IDENTIFIER: names.check_label(names.identifier(service.name, RayNodeType.HEAD)),
        },
        "ownerReferences": [rayservice_owner_reference(service)],
    }
    return built


def serve_ports(cluster: RayCluster) -> list[JSONObject]:
    """The head container's `serve`/`serve-*` ports as Service ports."""
    return [
        {"name": name, "port": number}
        for name, number in sorted(service_ports(cluster).items())
        if is_serving_port(name)
    ]


def serve_port(cluster: RayCluster) -> int:
    """The head's `serve` port number (8000 unless the template says otherwise)."""
    return service_ports(cluster).get(k.PORT_NAME_SERVING, k.PORT_SERVING)


def serving_selector(cluster_name: str) -> dict[str, str]:
    """The pods of a cluster whose Serve proxy is healthy."""
    return {k.LABEL_CLUSTER: cluster_name, k.LABEL_SERVE: flags.TRUE}


def build_rayservice_serve_service(service: RayService, cluster: RayCluster) -> JSONObject:
    """`<rayservice>-serve-svc`: the user's `serveService` merged, serving pods of `cluster`.

    Raises:
        MissingServePortError: If neither the user nor the head container names a serve port.
    """
    user = copy.deepcopy(service.spec.serve_service or {})
    meta = user.get("metadata") or {}
    spec = user.get("spec") or {}
    name = serve_service_name(service)
    # As KubeRay: the head's serve ports, and only those; a user's ports count only when the
    # head names none, and then only the one named `serve` (its name and number).
    ports = serve_ports(cluster)
    if not ports:
        named = [p for p in spec.get("ports") or [] if p.get("name") == k.PORT_NAME_SERVING][:1]
        ports = [{"name": p["name"], "port": p.get("port")} for p in named]
    if not ports:
        raise MissingServePortError(
            "the Ray head container has no port named 'serve' (or 'serve-*'), "
            "so there is nothing for the RayService's serve Service to expose"
        )
    spec["ports"] = ports
    spec["selector"] = serving_selector(cluster.name)
    service_type = cluster.spec.head_group_spec.service_type
    if not spec.get("type") and service_type:
        spec["type"] = service_type
    meta.update(
        {
            "name": name,
            "namespace": service.namespace,
            "labels": {
                **(meta.get("labels") or {}),
                **originated_labels(service),
                k.LABEL_SERVE: names.serve_service_label(service.name),
            },
            "ownerReferences": [rayservice_owner_reference(service)],
        }
    )
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def selected_cluster(service_obj: JSONObject | None) -> str | None:
    """The `ray.io/cluster` a Service selects (None: no Service; "" if it selects none)."""
    if service_obj is None:
        return None
    return str(((service_obj.get("spec") or {}).get("selector") or {}).get(k.LABEL_CLUSTER, ""))


def switched(existing: JSONObject, wanted: JSONObject) -> JSONObject | None:
    """`existing` rewritten to `wanted`, keeping its ClusterIP; None if the selector agrees.

    KubeRay updates the Service only when the `ray.io/cluster` selector differs (S8), and the
    API server refuses a change of `clusterIP`, so the allocated one is carried over.
    """
    if selected_cluster(existing) == selected_cluster(wanted):
        return None
    updated = copy.deepcopy(existing)
    spec = copy.deepcopy(wanted["spec"])
    old = existing.get("spec") or {}
    for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if field in old:
            spec[field] = old[field]
    updated["spec"] = spec
    meta = updated["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), **wanted["metadata"].get("labels", {})}
    return updated


# --- endpoints (S17) -----------------------------------------------------------------------------


def ready_endpoint_count(slices: Iterable[JSONObject]) -> int:
    """Unique ready pods (by uid, else address) across a Service's EndpointSlices."""
    seen: set[str] = set()
    for endpoint_slice in slices:
        for endpoint in endpoint_slice.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            ref = endpoint.get("targetRef") or {}
            key = ref.get("uid") or ",".join(endpoint.get("addresses") or [])
            if key:
                seen.add(key)
    return len(seen)
