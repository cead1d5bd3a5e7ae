"""A container's environment and command line, as the kubelet computes them (pure).

Kubernetes defines `$(VAR)` references in env values, command and args (`$$` escapes, an
unknown reference stays as written), env from literal values, ConfigMap and Secret keys,
downward-API fields and resource fields, and `envFrom` with a prefix. Containers do not
inherit the node's environment; they get the image's, then the pod's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

JsonObject = dict[str, Any]
# (source kind "configMap" or "secret", name) -> decoded key/value data, None when missing
Lookup = Callable[[str, str], Mapping[str, str] | None]

_LABEL_PATH = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")
_SUFFIXES = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
}  # fmt: skip


class ConfigError(Exception):
    """The container cannot start: what kubelet reports as CreateContainerConfigError."""


def expand(text: str, mapping: Mapping[str, str]) -> str:
    """Expand `$(VAR)` references the way Kubernetes does (third_party/forked/golang/expansion)."""
    out: list[str] = []
    cursor, checkpoint = 0, 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1 :]
            if rest[0] == "$":
                out.append("$")
                advance = 1
            elif rest[0] == "(" and ")" in rest:
                name = rest[1 : rest.index(")")]
                out.append(mapping.get(name, f"$({name})"))
                advance = len(name) + 2
            else:
                out.append("$" + rest[0])
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


def field_value(pod: JsonObject, path: str) -> str:
    """Return a downward-API field (`fieldRef.fieldPath`) of a pod."""
    meta, spec, status = pod["metadata"], pod.get("spec", {}), pod.get("status", {})
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": status.get("podIP", ""),
        "status.hostIP": status.get("hostIP", ""),
        "status.podIPs": ",".join(p.get("ip", "") for p in status.get("podIPs") or []),
        "status.hostIPs": ",".join(p.get("ip", "") for p in status.get("hostIPs") or []),
    }
    if path in simple:
        return str(simple[path])
    if match := _LABEL_PATH.match(path):
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        items = sorted((meta.get(path.split(".")[1]) or {}).items())
        return "\n".join(f'{k}="{v}"' for k, v in items)
    raise ConfigError(f"unsupported fieldPath {path!r}")


def quantity(text: str) -> float:
    """Parse a Kubernetes resource quantity ("500m", "2Gi", "1e3") into a number."""
    text = text.strip()
    if text[-2:] in _SUFFIXES:
        return float(text[:-2]) * _SUFFIXES[text[-2:]]
    if text[-1:] in _SUFFIXES:
        return float(text[:-1]) * _SUFFIXES[text[-1:]]
    return float(text)


def resource_value(pod: JsonObject, container: JsonObject, ref: JsonObject, cpus: int) -> str:
    """Return a `resourceFieldRef` value, rounded up to the divisor as the kubelet does."""
    name = ref.get("containerName") or container.get("name")
    target = next(
        (c for c in pod.get("spec", {}).get("containers") or [] if c.get("name") == name),
        container,
    )
    kind, _, resource = ref.get("resource", "").partition(".")
    resources = target.get("resources") or {}
    raw = (resources.get(kind) or {}).get(resource)
    if raw is None and kind == "requests":
        raw = (resources.get("limits") or {}).get(resource)
    if raw is None:  # unset limits (and requests) report the node's allocatable
        value = float(cpus) if resource == "cpu" else 0.0 if kind == "requests" else 2.0**40
    else:
        value = quantity(str(raw))
    divisor = quantity(str(ref.get("divisor") or "1"))
    return str(
        max(1, math.ceil(value / divisor)) if resource == "cpu" else math.ceil(value / divisor)
    )


def _key_ref(lookup: Lookup, source: str, ref: JsonObject) -> str | None:
    data = lookup(source, ref.get("name", ""))
    key = ref.get("key", "")
    if data is not None and key in data:
        return data[key]
    if ref.get("optional"):
        return None
    what = "configmap" if source == "configMap" else "secret"
    if data is None:
        raise ConfigError(f'{what} "{ref.get("name", "")}" not found')
    raise ConfigError(f"couldn't find key {key} in {what.capitalize()} {ref.get('name', '')}")


def container_env(
    pod: JsonObject,
    container: JsonObject,
    lookup: Lookup,
    base: Mapping[str, str],
    cpus: int = 1,
) -> dict[str, str]:
    """Return a container's environment: `base` (the image's), then envFrom, then env in order."""
    env = dict(base)
    for source in container.get("envFrom") or []:
        kind = "configMap" if "configMapRef" in source else "secret"
        ref = source.get("configMapRef") or source.get("secretRef") or {}
        data = lookup(kind, ref.get("name", ""))
        if data is None:
            if ref.get("optional"):
                continue
            raise ConfigError(f'{kind.lower()} "{ref.get("name", "")}" not found')
        env.update({source.get("prefix", "") + k: v for k, v in data.items()})
    for var in container.get("env") or []:
        value = _env_value(pod, container, var, lookup, env, cpus)
        if value is not None:
            env[var["name"]] = value
    return env


def _env_value(
    pod: JsonObject,
    container: JsonObject,
    var: JsonObject,
    lookup: Lookup,
    env: Mapping[str, str],
    cpus: int,
) -> str | None:
    source = var.get("valueFrom")
    if not source:
        return expand(str(var.get("value", "")), env)
    if "fieldRef" in source:
        return field_value(pod, source["fieldRef"].get("fieldPath", ""))
    if "resourceFieldRef" in source:
        return resource_value(pod, container, source["resourceFieldRef"], cpus)
    if "configMapKeyRef" in source:
        return _key_ref(lookup, "configMap", source["configMapKeyRef"])
    if "secretKeyRef" in source:
        return _key_ref(lookup, "secret", source["secretKeyRef"])
    raise ConfigError(f"unsupported valueFrom for {var.get('name')}")


def argv(command: list[str], env: Mapping[str, str]) -> list[str]:
    """Expand `$(VAR)` in each element of a command line."""
    return [expand(part, env) for part in command]


def _env_name(name: str) -> str:
    return name.upper().replace("-", "_")


def service_links(services: list[JsonObject]) -> dict[str, str]:
    """The variables the kubelet derives from Services (k8s pkg/kubelet/envvars).

    For each Service with a ClusterIP: `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT` (the
    first port) and one `<NAME>_SERVICE_PORT_<PORT NAME>` per named port, plus the Docker-link
    style `<NAME>_PORT` and `<NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]`.
    """
    env: dict[str, str] = {}
    for service in services:
        spec = service.get("spec") or {}
        ip, ports = spec.get("clusterIP"), spec.get("ports") or []
        if not ip or ip == "None" or not ports:
            continue
        name = _env_name(service["metadata"]["name"])
        env[f"{name}_SERVICE_HOST"] = ip
        env[f"{name}_SERVICE_PORT"] = str(ports[0]["port"])
        for port in ports:
            if port.get("name"):
                env[f"{name}_SERVICE_PORT_{_env_name(port['name'])}"] = str(port["port"])
        first = ports[0]
        env[f"{name}_PORT"] = f"{first.get('protocol', 'TCP').lower()}://{ip}:{first['port']}"
        for port in ports:
            protocol = port.get("protocol", "TCP")
            prefix = f"{name}_PORT_{port['port']}_{protocol.upper()}"
            env[prefix] = f"{protocol.lower()}://{ip}:{port['port']}"
            env[f"{prefix}_PROTO"] = protocol.lower()
            env[f"{prefix}_PORT"] = str(port["port"])
            env[f"{prefix}_ADDR"] = ip
    return env
