"""Container ports: a port number is an integer from 1 to 65535.

KubeRay's CRDs type `containerPort` as an int32, so the API server refuses anything else in a
stored CR; ours keep pod templates as preserved objects, where it can be any value. The
controller reads the head's ports to build its Services, and the Ray container's to aim the
probes and the submitter at the dashboard, so a port that is not a number is refused here,
at its field, with the range Kubernetes allows for a pod's port.
"""

from __future__ import annotations

from typing import Any

from crds.common import JSONObject
from crds.messages import quoted
from crds.validation import templates
from crds.validation.scope import ClusterScope
from crds.violations import Violation, join_path

_LOWEST, _HIGHEST = 1, 65535


def cluster_ports(scope: ClusterScope) -> list[Violation]:
    """The container ports of the head and every worker group."""
    found = template_ports(scope.spec.head_group_spec.template, scope.head_template_path)
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        found += template_ports(group.template, scope.worker_template_path(index))
    return found


def template_ports(template: JSONObject | None, path: str) -> list[Violation]:
    """Every `ports` entry of a pod template's containers without a port number."""
    found: list[Violation] = []
    for index, container in enumerate(templates.containers(template or {})):
        where = join_path(templates.containers_path(path), index, "ports")
        ports = container.get("ports")
        if ports is not None and not isinstance(ports, list):
            found.append(Violation(where, "ports must be a list of container ports"))
        for number, port in enumerate(templates.objects(ports)):
            value = port.get("containerPort")
            if not _is_port(value):
                got = "nothing" if value is None else quoted(value)
                message = f"containerPort must be a port number from 1 to 65535 (got {got})"
                found.append(Violation(join_path(where, number, "containerPort"), message))
    return found


def _is_port(value: Any) -> bool:
    return type(value) is int and _LOWEST <= value <= _HIGHEST
