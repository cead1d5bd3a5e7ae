"""The node's copy of what it needs from the API server, kept by list+watch.

The kubelet and the Services networking read a `Store` on devcluster's own API server; as the
node of a real one they read this `Mirror` instead, through the same calls (`ObjectView`):
`get`, `objects`, and listeners called with every change. Objects are keyed as devcluster's
store keys them (`/pods`, `discovery.k8s.io/endpointslices`), so the readers need no change.

An `Informer` fills one resource: it lists, replaces the mirror's copy (announcing what was
added, changed and removed meanwhile), then watches from the list's resourceVersion, and lists
again when the watch is too old (410) or breaks. A resource whose API is not there yet (the
Gateway API before its CRDs) is asked for again every few seconds. Objects fetched one by one
(the ConfigMaps and Secrets a pod references, which a node may not list) are `put` directly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from devcluster.node.client import ApiError, NodeClient
from devcluster.store import Event, Listener

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)
_RETRY_FIRST, _RETRY_MAX = 0.2, 5.0
_MISSING_API_RETRY = 5.0


def _key(obj: JsonObject) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


def _rv(obj: JsonObject) -> int:
    text = str(obj["metadata"].get("resourceVersion", "0"))
    return int(text) if text.isdigit() else 0


class Mirror:
    """Objects by resource, namespace and name; listeners see every change in order."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[tuple[str, str], JsonObject]] = {}
        self._listeners: list[Listener] = []
        self._synced: dict[str, asyncio.Event] = {}

    def get(self, resource: str, namespace: str, name: str) -> JsonObject | None:
        """Return one object, or None."""
        return self._objects.get(resource, {}).get((namespace, name))

    def objects(self, resource: str, namespace: str | None = None) -> list[JsonObject]:
        """Return a resource's objects in key order, optionally within one namespace."""
        items = self._objects.get(resource, {})
        keys = sorted(k for k in items if namespace is None or k[0] == namespace)
        return [items[k] for k in keys]

    def add_listener(self, listener: Listener) -> None:
        """Call `listener` with every change from now on."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling a listener."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def put(self, resource: str, obj: JsonObject) -> None:
        """Add or replace one object (ADDED or MODIFIED), unless it is an older copy."""
        items = self._objects.setdefault(resource, {})
        key = _key(obj)
        old = items.get(key)
        if old is not None and _rv(old) > _rv(obj):
            return
        if old is not None and old == obj:
            return
        items[key] = obj
        self._publish(Event("MODIFIED" if old else "ADDED", _rv(obj), resource, obj, old))

    def drop(self, resource: str, obj: JsonObject) -> None:
        """Remove one object (DELETED, carrying its last state)."""
        old = self._objects.get(resource, {}).pop(_key(obj), None)
        if old is not None:
            self._publish(Event("DELETED", _rv(obj), resource, obj, old))

    def replace(self, resource: str, listed: Iterable[JsonObject]) -> None:
        """Make a resource's objects exactly `listed` (a fresh list), announcing the difference."""
        fresh = {_key(o): o for o in listed}
        for key, old in list(self._objects.get(resource, {}).items()):
            if key not in fresh:
                self.drop(resource, old)
        for obj in fresh.values():
            self.put(resource, obj)
        self.synced(resource).set()

    def synced(self, resource: str) -> asyncio.Event:
        """Set once the resource was listed the first time."""
        return self._synced.setdefault(resource, asyncio.Event())

    def _publish(self, event: Event) -> None:
        for listener in list(self._listeners):
            listener(event)


@dataclass(frozen=True)
class Source:
    """One resource the node follows: where to list it and under which store key."""

    resource: str  # the store key, e.g. "/pods"
    path: str  # the collection path, e.g. "/api/v1/pods"
    field_selector: str = ""
    optional: bool = False  # an API that may be missing (CRDs): keep asking


class Informer:
    """Keeps one resource of a `Mirror` in step with the API server until cancelled."""

    def __init__(self, client: NodeClient, mirror: Mirror, source: Source) -> None:
        self.client, self.mirror, self.source = client, mirror, source

    def __repr__(self) -> str:
        return f"Informer({self.source.resource})"

    async def run(self) -> None:
        """List, watch, and list again, forever."""
        delay = _RETRY_FIRST
        version: str | None = None
        while True:
            try:
                if version is None:
                    version = await self._list()
                version = await self._watch(version)
                delay = _RETRY_FIRST
            except ApiError as err:
                if err.code == 410:  # too old: start over from a fresh list
                    version = None
                    continue
                if err.code == 404 and self.source.optional:
                    self.mirror.replace(self.source.resource, [])
                    version = None
                    await asyncio.sleep(_MISSING_API_RETRY)
                    continue
                log.debug("%r: %s; again in %.1f s", self, err, delay)
                version = None if not err.retryable else version
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX)

    def _params(self) -> dict[str, str]:
        return {"fieldSelector": self.source.field_selector} if self.source.field_selector else {}

    async def _list(self) -> str:
        answer = await self.client.request("GET", self.source.path, params=self._params())
        # Items of a list carry no kind; watch events and single reads do. Readers compare.
        kind = str(answer.get("kind", "")).removesuffix("List")
        items = [
            {"apiVersion": answer.get("apiVersion", ""), "kind": kind, **item}
            for item in answer.get("items") or []
        ]
        self.mirror.replace(self.source.resource, items)
        return str(answer["metadata"].get("resourceVersion", ""))

    async def _watch(self, version: str) -> str:
        """Apply watch events from `version`; return the last version seen when it ends."""
        params = {**self._params(), "resourceVersion": version, "allowWatchBookmarks": "true"}
        async for event in self.client.watch(self.source.path, params):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code", 500))
                raise ApiError(code, str(obj.get("reason", "")), str(obj.get("message", "")))
            version = str(obj.get("metadata", {}).get("resourceVersion", version))
            if kind == "DELETED":
                self.mirror.drop(self.source.resource, obj)
            elif kind in ("ADDED", "MODIFIED"):
                self.mirror.put(self.source.resource, obj)
        return version
