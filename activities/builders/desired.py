"""What a RayCluster asks for: the desired resources of its status.

KubeRay reports `desiredCPU/Memory/GPU/TPU` from the spec alone (`util.go`
CalculateDesiredResources; C27 in docs/kuberay-parity.md). The worker counts beside them come from
`crds.replicas`, which the pod decisions share.
"""

from __future__ import annotations

from typing import Any

from activities.builders.ray_start import is_gpu_resource
from activities.contract import DesiredResources
from crds import replicas
from crds.common import JSONObject
from crds.quantities import ZERO, Quantity, try_parse_quantity
from crds.raycluster import RayCluster, RayClusterSpec

TPU_RESOURCE = "google.com/tpu"


def pod_resources(pod_spec: JSONObject) -> dict[str, Quantity]:
    """A pod's resources: per container, requests, completed by limits; summed over containers."""
    total: dict[str, Quantity] = {}
    for container in pod_spec.get("containers") or []:
        resources = container.get("resources") or {}
        merged: dict[str, Any] = dict(resources.get("limits") or {})
        merged.update(resources.get("requests") or {})
        for name, value in merged.items():
            quantity = try_parse_quantity(value)
            if quantity is not None:
                total[name] = total.get(name, ZERO) + quantity
    return total


def sum_resources(*lists: dict[str, Quantity]) -> dict[str, Quantity]:
    """Resource lists added name by name, in order (a sum keeps its first term's format)."""
    totals: dict[str, Quantity] = {}
    for resources in lists:
        for name, quantity in resources.items():
            totals[name] = totals.get(name, ZERO) + quantity
    return totals


def cluster_resources(spec: RayClusterSpec, minimum: bool = False) -> dict[str, Quantity]:
    """The resources of the head and every non-suspended group's pods.

    Each group has `replicas` (or, `minimum`, `minReplicas`) × numOfHosts pods; `replicas` as
    written, not clamped to min/max, as in KubeRay (`CalculateDesiredResources`,
    `CalculateMinResources`).
    """
    head_spec = spec.head_group_spec.template.get("spec") or {}
    lists = [pod_resources(head_spec)]
    for group in spec.worker_group_specs or []:
        if group.suspend:
            continue
        count = group.min_replicas if minimum else group.replicas
        pods = replicas.hosts(group) * (count or 0)
        per_pod = pod_resources(group.template.get("spec") or {})
        lists.append({name: quantity.times(pods) for name, quantity in per_pod.items()})
    return sum_resources(*lists)


def desired_resources(cluster: RayCluster) -> DesiredResources:
    """The status's desired resources: `cluster_resources`, GPUs of every kind summed."""
    totals = cluster_resources(cluster.spec)
    gpus = ZERO
    for name, quantity in totals.items():
        if is_gpu_resource(name) and not quantity.is_zero:
            gpus = gpus + quantity
    return DesiredResources(
        cpu=str(totals.get("cpu", ZERO)),
        memory=str(totals.get("memory", ZERO)),
        gpu=str(gpus),
        tpu=str(totals.get(TPU_RESOURCE, ZERO)),
    )
