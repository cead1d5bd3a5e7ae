"""Resource quantities: every one in a pod template, a group's `resources` or the autoscaler's.

The CRDs keep pod templates (and the autoscaler container's resource requirements) as
preserved objects, so the API server parses none of their quantities until a pod is created,
and a group's `resources` is a map of strings. The controller parses them on every pass: for
the desired resources in the status, the `ray start` flags and the size of /dev/shm. Checked
here, a quantity that cannot be read, or is beyond the bounds of `crds.quantities`, refuses
the CR at the field that holds it, instead of failing each pass that reads it.

KubeRay skips a group resource it cannot parse (with a log line); here it is a violation, as
a pod's quantity would be one for the API server.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from crds.common import JSONObject
from crds.messages import quoted
from crds.quantities import quantity_problem
from crds.validation import templates
from crds.validation.scope import ClusterScope, key_path
from crds.violations import Violation, join_path

# The two ResourceLists of a ResourceRequirements.
_REQUIREMENTS = ("limits", "requests")


def cluster_quantities(scope: ClusterScope) -> list[Violation]:
    """Every quantity of a RayClusterSpec: head and worker templates and `resources`."""
    spec = scope.spec
    head = spec.head_group_spec
    found = template_quantities(head.template, scope.head_template_path)
    found += _resource_map(head.resources, scope.at("headGroupSpec", "resources"))
    for index, group in enumerate(spec.worker_group_specs or []):
        found += template_quantities(group.template, scope.worker_template_path(index))
        found += _resource_map(group.resources, scope.at("workerGroupSpecs", index, "resources"))
    if spec.autoscaler_options is not None:
        path = scope.at("autoscalerOptions", "resources")
        found += _requirements(spec.autoscaler_options.resources, path)
    return found


def template_quantities(template: JSONObject | None, path: str) -> list[Violation]:
    """Every quantity of a pod template at `path`, each reported where it is."""
    pod = templates.pod_spec(template or {})
    return _checked(_pod_quantities(pod, join_path(path, "spec")))


def _pod_quantities(pod: JSONObject, path: str) -> Iterator[tuple[str, Any]]:
    """(path, value) of every quantity in a pod spec."""
    for field in ("containers", "initContainers"):
        for index, container in enumerate(templates.objects(pod.get(field))):
            where = join_path(path, field, index, "resources")
            yield from _requirement_entries(container.get("resources"), where)
    yield from _requirement_entries(pod.get("resources"), join_path(path, "resources"))
    yield from _list_entries(pod.get("overhead"), join_path(path, "overhead"))
    for index, volume in enumerate(templates.objects(pod.get("volumes"))):
        volume_path = join_path(path, "volumes", index)
        empty_dir = volume.get("emptyDir")
        if isinstance(empty_dir, dict) and "sizeLimit" in empty_dir:
            yield join_path(volume_path, "emptyDir", "sizeLimit"), empty_dir["sizeLimit"]
        claim = ("ephemeral", "volumeClaimTemplate", "spec", "resources")
        yield from _requirement_entries(_dig(volume, claim), join_path(volume_path, *claim))


def _requirement_entries(requirements: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(path, value) of the limits and requests of a ResourceRequirements."""
    if isinstance(requirements, dict):
        for kind in _REQUIREMENTS:
            yield from _list_entries(requirements.get(kind), join_path(path, kind))


def _list_entries(resources: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(path, value) of every entry of a ResourceList (`cpu: 500m`, `memory: 2Gi`…)."""
    if isinstance(resources, dict):
        for name, value in resources.items():
            yield key_path(path, str(name)), value


def _requirements(requirements: JSONObject | None, path: str) -> list[Violation]:
    return _checked(_requirement_entries(requirements, path))


def _resource_map(resources: Mapping[str, str] | None, path: str) -> list[Violation]:
    """A group's `resources`: Ray resource names to quantities."""
    return _checked(_list_entries(resources, path))


def _checked(entries: Iterator[tuple[str, Any]]) -> list[Violation]:
    found: list[Violation] = []
    for path, value in entries:
        problem = quantity_problem(value)
        if problem is not None:
            found.append(Violation(path, f"{quoted(value)} {problem}"))
    return found


def _dig(obj: Any, keys: tuple[str, ...]) -> Any:
    """The value under `keys` in nested objects, None where one is missing or not an object."""
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj
