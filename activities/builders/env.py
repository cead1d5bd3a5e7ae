"""Small helpers for container env lists, kept the way Kubernetes serialises them.

KubeRay appends env vars in a fixed order and mostly only when the user has not set the same
name; the helpers here make both rules explicit. An empty `value` is left out, as Go's
`omitempty` does, so our manifests compare equal to KubeRay's.
"""

from __future__ import annotations

from crds.common import JSONObject


def env_var(name: str, value: str = "", value_from: JSONObject | None = None) -> JSONObject:
    """An EnvVar, with empty fields left out."""
    var: JSONObject = {"name": name}
    if value:
        var["value"] = value
    if value_from:
        var["valueFrom"] = value_from
    return var


def field_env(name: str, field_path: str) -> JSONObject:
    """An EnvVar read from the pod's own fields (the downward API)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def has_env(container: JSONObject, name: str) -> bool:
    """Whether the container already declares the variable."""
    return any(var.get("name") == name for var in container.get("env") or [])


def append_env(container: JSONObject, *variables: JSONObject) -> None:
    """Append env vars unconditionally."""
    container["env"] = [*(container.get("env") or []), *variables]


def set_default_env(container: JSONObject, variable: JSONObject) -> None:
    """Append an env var unless the user already set one of the same name."""
    if not has_env(container, str(variable["name"])):
        append_env(container, variable)
