"""The Services a RayCluster owns: head, serve (on request) and headless workers.

Workers, drivers, `kubectl ray` and Ingresses reach Ray through these Services by name, and
RayJob/RayService copy the head Service, so names, selectors and ports follow KubeRay's
`common/service.go` exactly.
"""

from __future__ import annotations

import copy

from activities.builders import names
from activities.builders.options import DEFAULT_OPTIONS, BuildOptions
from crds import constants as k
from crds import flags
from crds.common import JSONObject
from crds.enums import RayNodeType
from crds.raycluster import RayCluster

APP_PROTOCOL = "tcp"
DEFAULT_PORTS = {
    k.PORT_NAME_CLIENT: k.PORT_CLIENT,
    k.PORT_NAME_GCS_SERVER: k.PORT_GCS_SERVER,
    k.PORT_NAME_DASHBOARD: k.PORT_DASHBOARD,
    k.PORT_NAME_METRICS: k.PORT_METRICS,
    k.PORT_NAME_SERVING: k.PORT_SERVING,
}


class MissingServePortError(ValueError):
    """The head container has no `serve` (or `serve-*`) port to expose."""


def service_ports(cluster: RayCluster) -> dict[str, int]:
    """Port name → number: the head container's ports (or the defaults), always with metrics."""
    containers = (cluster.spec.head_group_spec.template.get("spec") or {}).get("containers") or []
    ports: dict[str, int] = {}
    for port in (containers[0].get("ports") or []) if containers else []:
        number = int(port.get("containerPort", 0))
        ports[port.get("name") or f"{number}-port"] = number
    if not ports:
        ports = dict(DEFAULT_PORTS)
    ports.setdefault(k.PORT_NAME_METRICS, k.PORT_METRICS)
    return ports


def is_serving_port(name: str) -> bool:
    """`serve` or `serve-*` (e.g. `serve-grpc`)."""
    return name == k.PORT_NAME_SERVING or name.startswith(k.PORT_NAME_SERVING + "-")


def build_head_service(cluster: RayCluster, options: BuildOptions = DEFAULT_OPTIONS) -> JSONObject:
    """The head Service: headless by default, or the user's `headService` merged with ours."""
    head = cluster.spec.head_group_spec
    template_labels = (head.template.get("metadata") or {}).get("labels") or {}
    defaults = names.head_service_labels(cluster.name)
    # Only the app name may come from the template, so the selector matches the head pod.
    selector = dict(defaults)
    if k.LABEL_APP_NAME in template_labels:
        selector[k.LABEL_APP_NAME] = template_labels[k.LABEL_APP_NAME]
    annotations = dict(cluster.spec.head_service_annotations or {})
    name = names.head_service_name(cluster.name, cluster.spec)
    service_type = head.service_type or ""
    ports = [
        {"name": port_name, "port": number, "appProtocol": APP_PROTOCOL}
        for port_name, number in sorted(service_ports(cluster).items())
    ]
    if head.head_service is not None:
        service = _merge_user_service(head.head_service, selector, annotations, ports)
    else:
        service = {
            "metadata": {"name": name, "labels": dict(selector)},
            "spec": {"selector": selector, "ports": ports},
        }
        if annotations:
            service["metadata"]["annotations"] = annotations
        if not options.head_cluster_ip_service and service_type in ("", "ClusterIP"):
            # At most one head pod: a headless Service resolves straight to it, ready or not.
            service["spec"]["clusterIP"] = "None"
            service["spec"]["publishNotReadyAddresses"] = True
    return _finish(service, cluster, name, service_type)


def _merge_user_service(
    user: JSONObject, selector: dict[str, str], annotations: dict[str, str], ports: list[JSONObject]
) -> JSONObject:
    service = copy.deepcopy(user)
    # A template may say `metadata:` or `spec:` with nothing after it; null is absent.
    metadata = service["metadata"] = service.get("metadata") or {}
    spec = service["spec"] = service.get("spec") or {}
    spec["selector"] = dict(selector)
    # headServiceAnnotations win over the template's; our selector labels win over its labels.
    metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    metadata["labels"] = {**(metadata.get("labels") or {}), **selector}
    user_ports = spec.get("ports") or []
    taken = {port.get("name") for port in user_ports}
    # KubeRay appends blindly and the API server then rejects duplicate names; the user's win.
    spec["ports"] = [*user_ports, *(port for port in ports if port["name"] not in taken)]
    return service


def wants_serve_service(cluster: RayCluster) -> bool:
    """Whether the cluster asks for `<cluster>-serve-svc` (`ray.io/enable-serve-service`)."""
    return cluster.annotations.get(k.ANNOTATION_ENABLE_SERVE_SERVICE) == flags.TRUE


def build_serve_service(cluster: RayCluster) -> JSONObject:
    """`<cluster>-serve-svc`, selecting every pod of the cluster on its serve ports."""
    ports = [
        {"name": port_name, "port": number}
        for port_name, number in sorted(service_ports(cluster).items())
        if is_serving_port(port_name)
    ]
    if not ports:
        raise MissingServePortError(
            "the Ray head container has no port named 'serve' (or 'serve-*'), "
            "so there is nothing for the Ray Serve Service to expose"
        )
    labels = {
        k.LABEL_ORIGINATED_FROM_CR_NAME: cluster.name,
        k.LABEL_ORIGINATED_FROM_CRD: names.CREATOR_RAYCLUSTER,
        k.LABEL_SERVE: names.serve_service_label(cluster.name),
    }
    service = {
        "metadata": {"name": names.serve_service_name(cluster.name), "labels": labels},
        "spec": {"selector": names.all_pods_selector(cluster.name), "ports": ports},
    }
    name = names.serve_service_name(cluster.name)
    return _finish(service, cluster, name, cluster.spec.head_group_spec.service_type or "")


def wants_headless_service(cluster: RayCluster) -> bool:
    """Whether any worker group spans several hosts (multi-host TPU slices and the like)."""
    return any((group.num_of_hosts or 1) > 1 for group in cluster.spec.worker_group_specs or [])


def build_headless_service(cluster: RayCluster) -> JSONObject:
    """`<cluster>-headless`: DNS for peer traffic between the hosts of multi-host replicas."""
    service = {
        "metadata": {
            "name": names.headless_service_name(cluster.name),
            "labels": names.headless_service_selector(cluster.name),
        },
        "spec": {
            "clusterIP": "None",
            "selector": {
                k.LABEL_CLUSTER: cluster.name,
                k.LABEL_NODE_TYPE: RayNodeType.WORKER.value,
            },
            # Hosts must find each other before the Ray processes report ready.
            "publishNotReadyAddresses": True,
        },
    }
    return _finish(service, cluster, names.headless_service_name(cluster.name), "ClusterIP")


def _finish(service: JSONObject, cluster: RayCluster, name: str, service_type: str) -> JSONObject:
    metadata, spec = service["metadata"], service["spec"]
    metadata["name"] = metadata.get("name") or name
    # Services stay in the cluster's namespace whatever a user template says.
    metadata["namespace"] = cluster.namespace
    if not spec.get("type") and service_type:
        spec["type"] = service_type
    metadata["ownerReferences"] = [names.owner_reference(cluster)]
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}
