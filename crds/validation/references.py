"""Names a CR uses to address other objects: they must be names the target kind allows.

A custom head Service, an auth Secret, a Redis credential Secret, a borrowed RayCluster and a
custom serve Service are all looked up or created by the name the user wrote. KubeRay reads
them by (namespace, name), so a name like `../../b/secrets/x` simply finds nothing; here such a
name is refused before anything is read or created, with the field that holds it, using
Kubernetes' own rules for the kind it names. Worker group names are checked for the same
reason: they become part of pod names and the `ray.io/group` label.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from crds.constants import LABEL_CLUSTER, LABEL_GROUP
from crds.messages import quoted
from crds.rayjob import RayJobSpec
from crds.rayservice import RayServiceSpec
from crds.validation.names import (
    dns1035_label_problem,
    dns1123_subdomain_problem,
    label_key_problems,
    label_value_problems,
)
from crds.validation.scope import ClusterScope, key_path
from crds.violations import Violation

# `<cluster>-<group>-worker-<5 characters>`: the longest pod name a group name goes into is
# clipped by KubeRay, so only the characters matter, not the length.
_POD_NAME_PROBE = "c-{group}-worker-abcde"

Problem = Callable[[str], str | None]


def cluster_references(scope: ClusterScope) -> list[Violation]:
    """The names a RayClusterSpec points at: head Service, Secrets, worker groups."""
    spec = scope.spec
    head_path = scope.at("headGroupSpec", "headService", "metadata", "name")
    found = _named(_metadata_name(spec.head_group_spec.head_service), head_path, "Service")
    if spec.auth_options is not None:
        path = scope.at("authOptions", "secretName")
        found += _named(spec.auth_options.secret_name, path, "Secret")
    options = spec.gcs_fault_tolerance_options
    if options is not None:
        for field, credential in (
            ("redisUsername", options.redis_username),
            ("redisPassword", options.redis_password),
        ):
            ref = ((credential.value_from if credential else None) or {}).get("secretKeyRef")
            path = scope.at("gcsFaultToleranceOptions", field, "valueFrom", "secretKeyRef", "name")
            found += _named(_get(ref, "name"), path, "Secret")
    for index, group in enumerate(spec.worker_group_specs or []):
        path = scope.at("workerGroupSpecs", index, "groupName")
        found += _group_name(group.group_name, path)
    return found


def selector_references(spec: RayJobSpec) -> list[Violation]:
    """`clusterSelector`: label syntax throughout, and a RayCluster name under `ray.io/cluster`."""
    found: list[Violation] = []
    for key, value in (spec.cluster_selector or {}).items():
        path = key_path("spec.clusterSelector", key)
        found += [Violation(path, f"label key {quoted(key)}: {p}") for p in label_key_problems(key)]
        if key == LABEL_CLUSTER and value:
            found += _named(value, path, "RayCluster")
        else:
            problems = label_value_problems(value)
            found += [Violation(path, f"label value {quoted(value)}: {p}") for p in problems]
    return found


def serve_service_reference(spec: RayServiceSpec) -> list[Violation]:
    """A custom `serveService.metadata.name` must be a Service name."""
    return _named(_metadata_name(spec.serve_service), "spec.serveService.metadata.name", "Service")


_RULES: dict[str, Problem] = {
    # Service names are DNS-1035 labels; everything else here is a DNS-1123 subdomain.
    "Service": dns1035_label_problem,
    "Secret": dns1123_subdomain_problem,
    "RayCluster": dns1123_subdomain_problem,
}


def _named(value: Any, path: str, kind: str) -> list[Violation]:
    """A violation when `value` (if given) is not a valid name for an object of `kind`."""
    if value is None or value == "":
        return []
    if not isinstance(value, str):
        return [Violation(path, f"a {kind} name must be a string, got {type(value).__name__}")]
    problem = _RULES[kind](value)
    if problem is None:
        return []
    return [Violation(path, f"{quoted(value)} is not a valid {kind} name: it {problem}")]


def _group_name(name: str, path: str) -> list[Violation]:
    """A group name goes into the `ray.io/group` label and into its pods' names."""
    found = [
        Violation(path, f"group name {quoted(name)} is not a valid {LABEL_GROUP} label value: {p}")
        for p in label_value_problems(name)
    ]
    if not found and dns1123_subdomain_problem(_POD_NAME_PROBE.format(group=name.lower())):
        message = (
            f"group name {quoted(name)} cannot be part of a pod name: "
            "use letters, digits, '-' and '.' only"
        )
        found.append(Violation(path, message))
    return found


def _metadata_name(obj: Mapping[str, Any] | None) -> Any:
    return _get(_get(obj, "metadata"), "name")


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else None
