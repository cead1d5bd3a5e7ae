"""The Events a kubelet records about a pod's containers, read off two statuses (pure).

`kubectl describe pod` shows what the kubelet did: Created and Started when a container
(re)starts, BackOff while a crashing one waits, Failed when it cannot be configured, Killing
when the pod is deleted. A real kubelet records them as it acts; this one derives them from
the change between the status it wrote last and the one it writes now, which carries the same
facts (a new container ID is a start, a new waiting reason a back-off).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class PodEvent:
    """One Event about a pod (or one of its containers)."""

    type: str  # Normal or Warning
    reason: str
    message: str
    field_path: str = ""  # spec.containers{<name>} for a container's events


def _by_name(status: JsonObject) -> dict[str, JsonObject]:
    statuses = [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]
    return {s["name"]: s for s in statuses}


def _field(pod: JsonObject, name: str) -> str:
    inits = {c["name"] for c in (pod.get("spec") or {}).get("initContainers") or []}
    return f"spec.initContainers{{{name}}}" if name in inits else f"spec.containers{{{name}}}"


def status_events(pod: JsonObject, old: JsonObject, new: JsonObject) -> list[PodEvent]:
    """The Events that moving a pod's status from `old` to `new` records."""
    before, name = _by_name(old), pod["metadata"]["name"]
    events: list[PodEvent] = []
    for container, now in _by_name(new).items():
        was = before.get(container) or {}
        field = _field(pod, container)
        if "running" in now.get("state", {}) and now.get("containerID") != was.get("containerID"):
            events.append(PodEvent("Normal", "Created", f"Created container: {container}", field))
            events.append(PodEvent("Normal", "Started", f"Started container {container}", field))
        waiting = now.get("state", {}).get("waiting") or {}
        old_waiting = was.get("state", {}).get("waiting") or {}
        if waiting.get("reason") == old_waiting.get("reason"):
            continue
        if waiting.get("reason") == "CrashLoopBackOff":
            message = f"Back-off restarting failed container {container} in pod {name}"
            events.append(PodEvent("Warning", "BackOff", message, field))
        elif waiting.get("reason") in ("CreateContainerConfigError", "CreateContainerError"):
            message = f"Error: {waiting.get('message', '')}"
            events.append(PodEvent("Warning", "Failed", message, field))
    return events


def killing_events(pod: JsonObject) -> list[PodEvent]:
    """The Killing Events of a deleted pod's running containers."""
    return [
        PodEvent("Normal", "Killing", f"Stopping container {name}", _field(pod, name))
        for name, status in _by_name(pod.get("status") or {}).items()
        if "running" in status.get("state", {})
    ]
