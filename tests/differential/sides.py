"""Two namespaces of one control plane, one per operator, and what each operator made in its own.

KubeRay's operator reconciles `KUBERAY` only (`dev --kuberay-namespace`), ours every other
namespace, here `OURS`. The names are chosen to occur nowhere else, so `normalise` can replace
them wherever they appear. A `Recorder` follows the status of every ray.io object in one
namespace from its first write (an API watch), and `capture` reads the objects an operator
made there and the Events it recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.differential.normalise import normalise, without_secret_values
from tests.e2e.conftest import LocalStack

KUBERAY = "diff-kuberay"
OURS = "diff-ours"
SIDES = (KUBERAY, OURS)

RAY_KINDS = {"RayCluster": "rayclusters", "RayJob": "rayjobs", "RayService": "rayservices"}
# What the operators create (or Kubernetes creates for them), read through ownerReferences.
CHILD_KINDS = (
    "pods",
    "services",
    "jobs.batch",
    "serviceaccounts",
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "ingresses.networking.k8s.io",
    "networkpolicies.networking.k8s.io",
    "secrets",
    "persistentvolumeclaims",
)
# Status fields that name the state a CR is in, by kind.
_STATES = {
    "RayCluster": ("state",),
    "RayJob": ("jobDeploymentStatus", "jobStatus"),
    "RayService": ("serviceStatus",),
}

Step = tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]
"""One status as the trajectory keeps it: the state fields, then (type, status, reason) of
each condition."""


def step(kind: str, status: dict[str, Any]) -> Step:
    """The part of a status the trajectory compares."""
    states = tuple(str(status.get(name) or "") for name in _STATES[kind])
    conditions = tuple(
        (str(c.get("type")), str(c.get("status")), str(c.get("reason")))
        for c in status.get("conditions") or []
    )
    return states, conditions


@dataclass
class Recorder:
    """The status trajectory of every ray.io object in one namespace, as a watch saw it."""

    stack: LocalStack
    namespace: str
    steps: dict[str, list[Step]] = field(default_factory=dict)
    uids: set[str] = field(default_factory=set)
    """Every ray.io object the watch saw: whose Events are the scenario's."""
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def trajectory(self, kind: str, name: str) -> list[Step]:
        """The distinct statuses of one object in the order written (repeats dropped)."""
        return list(self.steps.get(f"{kind}/{name}", []))

    def states(self, kind: str, name: str) -> list[tuple[str, ...]]:
        """The distinct states of one object in the order reached."""
        reached: list[tuple[str, ...]] = []
        for states, _ in self.trajectory(kind, name):
            if any(states) and (not reached or reached[-1] != states):
                reached.append(states)
        return reached

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Recorder]:
        started = [asyncio.Event() for _ in RAY_KINDS]
        self._tasks = [
            asyncio.create_task(self._follow(kind, plural, ready))
            for (kind, plural), ready in zip(RAY_KINDS.items(), started, strict=True)
        ]
        try:
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 60)
            yield self
        finally:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _follow(self, kind: str, plural: str, started: asyncio.Event) -> None:
        path = f"/apis/ray.io/v1/namespaces/{self.namespace}/{plural}"
        async with self.stack.api_client() as http:
            version = (await http.get(path)).json()["metadata"]["resourceVersion"]
            params = {"watch": "1", "resourceVersion": version}
            async with http.stream("GET", path, params=params, timeout=None) as stream:
                started.set()
                async for line in stream.aiter_lines():
                    if line.strip():
                        self._record(kind, json.loads(line)["object"])

    def _record(self, kind: str, obj: dict[str, Any]) -> None:
        key = f"{kind}/{obj['metadata']['name']}"
        self.uids.add(obj["metadata"]["uid"])
        now = step(kind, normalise(obj.get("status") or {}, self.namespace))
        seen = self.steps.setdefault(key, [])
        if not seen or seen[-1] != now:
            seen.append(now)


async def capture(stack: LocalStack, namespace: str, also: Sequence[str] = ()) -> dict[str, Any]:
    """The namespace's ray.io objects and every object owned by something (of `CHILD_KINDS`
    and `also`), normalised.

    Keys are `Kind/name` with the name normalised; pods lose their status (the node's), and
    several objects under one normalised name (worker pods) are kept as a sorted list.
    """
    kinds = ",".join([*RAY_KINDS.values(), *CHILD_KINDS, *also])
    raw = await stack.kubectl("get", kinds, "-n", namespace, "-o", "json")
    found: dict[str, list[Any]] = {}
    for obj in json.loads(raw)["items"]:
        if obj["kind"] not in RAY_KINDS and not obj["metadata"].get("ownerReferences"):
            continue
        clean = normalise(without_secret_values(obj), namespace)
        if obj["kind"] == "Pod":
            clean.pop("status", None)
        found.setdefault(f"{obj['kind']}/{clean['metadata']['name']}", []).append(clean)
    return {
        key: objs[0] if len(objs) == 1 else sorted(objs, key=json.dumps)
        for key, objs in found.items()
    }


async def event_reasons(
    stack: LocalStack, namespace: str, uids: set[str]
) -> set[tuple[str, str, str]]:
    """(involved kind, type, reason) of the Events recorded about the ray.io objects `uids`."""
    raw = await stack.kubectl("get", "events", "-n", namespace, "-o", "json")
    return reasons_about(json.loads(raw)["items"], uids)


def reasons_about(events: list[dict[str, Any]], uids: set[str]) -> set[tuple[str, str, str]]:
    """(involved kind, type, reason) of the `events` about ray.io objects of `uids`.

    An operator can still be recording Events about an earlier scenario's object of the same
    name after that scenario's Events were deleted (KubeRay's reconcile from a stale cache):
    only the uids this scenario's watch saw count.
    """
    return {
        (e["involvedObject"]["kind"], e.get("type", ""), e.get("reason", ""))
        for e in events
        if e["involvedObject"].get("kind") in RAY_KINDS and e["involvedObject"].get("uid") in uids
    }
