"""Read-only access to the embedded pod templates the rules look into.

Pod templates are kept as raw JSON (`JSONObject`) so that no Kubernetes field is lost, which
means nothing guarantees their shape. The rules only need a handful of fields (containers, env
names, volume mounts, volumes, restartPolicy); these accessors return empty values for anything
missing or malformed, so a rule never crashes on a template the API server would reject anyway.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from crds.common import JSONObject
from crds.violations import join_path


def objects(value: Any) -> list[JSONObject]:
    """The list items that are objects; anything else counts as absent."""
    if not isinstance(value, list):
        return []
    return [item if isinstance(item, dict) else {} for item in value]


def pod_spec(template: JSONObject) -> JSONObject:
    """`template.spec`, or {} when missing."""
    spec = template.get("spec")
    return spec if isinstance(spec, dict) else {}


def containers(template: JSONObject) -> list[JSONObject]:
    """`template.spec.containers`; the Ray container is the first one."""
    return objects(pod_spec(template).get("containers"))


def ray_container(template: JSONObject) -> JSONObject | None:
    """The first container, which KubeRay treats as the Ray container."""
    found = containers(template)
    return found[0] if found else None


def restart_policy(template: JSONObject) -> str:
    """`template.spec.restartPolicy`, "" when unset (Kubernetes then uses Always)."""
    value = pod_spec(template).get("restartPolicy")
    return value if isinstance(value, str) else ""


def volumes(template: JSONObject) -> list[JSONObject]:
    """`template.spec.volumes`."""
    return objects(pod_spec(template).get("volumes"))


def env_vars(container: JSONObject) -> list[JSONObject]:
    """A container's `env` list."""
    return objects(container.get("env"))


def volume_mounts(container: JSONObject) -> list[JSONObject]:
    """A container's `volumeMounts` list."""
    return objects(container.get("volumeMounts"))


def find_env(env: list[JSONObject], name: str) -> tuple[int, JSONObject] | None:
    """The first env var called `name` and its index, as KubeRay's lookups find it."""
    for index, var in enumerate(env):
        if var.get("name") == name:
            return index, var
    return None


def env_entries(env: list[JSONObject], names: tuple[str, ...]) -> Iterator[tuple[int, str]]:
    """(index, name) of every env var whose name is one of `names`."""
    for index, var in enumerate(env):
        name = var.get("name")
        if isinstance(name, str) and name in names:
            yield index, name


def containers_path(template_path: str) -> str:
    """`<template>.spec.containers`."""
    return join_path(template_path, "spec", "containers")


def ray_container_path(template_path: str, *rest: str | int) -> str:
    """A path inside the Ray container, e.g. `<template>.spec.containers[0].env[2]`."""
    return join_path(template_path, "spec", "containers", 0, *rest)
