"""What a Service the operator creates for a CR may be: the types KubeRay builds, no aliases.

A head Service (`headGroupSpec.serviceType`, the `headService` template) and a RayService's
`serveService` template become Services the worker creates with its own rights, and the worker
itself calls the head Service (the dashboard). KubeRay builds them as ClusterIP (headless by
default), NodePort or LoadBalancer. Two things a template could add would let a tenant point
traffic where their namespace does not reach:

* `type: ExternalName` (with `externalName`) is a DNS alias to any name: an alias to
  `<head-svc>.<other-namespace>.svc.cluster.local` sends every call through the Service's own
  name, which names the CR's namespace, to another namespace's Ray.
* `externalIPs` make every node route traffic for those addresses to this Service, whoever
  owns the addresses (CVE-2020-8554).

Both are refused here, with the field that holds them, before anything is created.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds.rayservice import RayServiceSpec
from crds.validation.scope import ClusterScope
from crds.violations import Violation, join_path

ALLOWED_TYPES = ("ClusterIP", "NodePort", "LoadBalancer")
"""The Service types KubeRay builds for a Ray cluster (`common/service.go`)."""
EXTERNAL_NAME = "ExternalName"


def head_service_violations(scope: ClusterScope) -> list[Violation]:
    """`headGroupSpec.serviceType` and the `headService` template of a RayClusterSpec."""
    head = scope.spec.head_group_spec
    found = _type_violations(head.service_type, scope.at("headGroupSpec", "serviceType"))
    template_path = scope.at("headGroupSpec", "headService")
    return found + service_template_violations(head.head_service, template_path)


def serve_service_violations(spec: RayServiceSpec) -> list[Violation]:
    """A RayService's `serveService` template."""
    return service_template_violations(spec.serve_service, "spec.serveService")


def service_template_violations(template: Any, path: str) -> list[Violation]:
    """The parts of a Service template that would reach beyond the CR's namespace.

    Args:
        template: The template as written (a mapping, or None when absent).
        path: The template's path in the CR.
    """
    spec = template.get("spec") if isinstance(template, Mapping) else None
    if not isinstance(spec, Mapping):
        return []
    spec_path = join_path(path, "spec")
    found = _type_violations(spec.get("type"), join_path(spec_path, "type"))
    if spec.get("externalName"):
        message = (
            "externalName makes the Service a DNS alias to another name, "
            "which a Ray cluster's Service may not be"
        )
        found.append(Violation(join_path(spec_path, "externalName"), message))
    if spec.get("externalIPs"):
        message = (
            "externalIPs are refused: every node would route traffic for those addresses to "
            "this Service, whoever owns them (CVE-2020-8554)"
        )
        found.append(Violation(join_path(spec_path, "externalIPs"), message))
    return found


def _type_violations(value: Any, path: str) -> list[Violation]:
    if value is None or value == "" or value in ALLOWED_TYPES:
        return []
    allowed = ", ".join(ALLOWED_TYPES)
    if value == EXTERNAL_NAME:
        message = (
            "ExternalName is not a type a Ray cluster's Service may have: it is a DNS alias "
            f"to any name, another namespace's Services included; use {allowed}"
        )
    else:
        message = f"{str(value)[:80]!r} is not a Service type KubeRay builds; use {allowed}"
    return [Violation(path, message)]
