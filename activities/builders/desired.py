"""What a RayCluster asks for: the desired resources of its status.

KubeRay reports `desiredCPU/Memory/GPU/TPU` from the spec alone (`util.go`
CalculateDesiredResources; C27 in docs/kuberay-parity.md). The worker counts beside them come from
`crds.replicas`, which the pod decisions share.
"""

from __future__ import annotations

from typing import Any

from activities.builders.quantities import ZERO, Quantity, try_parse_quantity
from activities.builders.ray_start import is_gpu_resource
from activities.contract import DesiredResources
from crds import replicas
from crds.common import JSONObject
from crds.raycluster import RayCluster

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


def desired_resources(cluster: RayCluster) -> DesiredResources:
    """Sum the head and every non-suspended group (replicas × numOfHosts pods each).

    Resources use `replicas` as written, not clamped to min/max: that is what KubeRay reports.
    """
    head_spec = cluster.spec.head_group_spec.template.get("spec") or {}
    totals = dict(pod_resources(head_spec))
    groups = cluster.spec.worker_group_specs or []
    for group in groups:
        if group.suspend:
            continue
        pods = replicas.hosts(group) * (group.replicas or 0)
        for name, quantity in pod_resources(group.template.get("spec") or {}).items():
            totals[name] = totals.get(name, ZERO) + quantity.times(pods)
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
