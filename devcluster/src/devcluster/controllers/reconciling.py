"""The loop every devcluster controller shares: store events in, keys queued, reconciles out.

kube-controller-manager's controllers are level-triggered: an event only says *which* object
to look at again, and the reconcile reads the current state from the cache. This module is
that pattern over the in-process store: a `Reconciler` maps each event to the keys it affects
and reconciles one key at a time from the store; a key queued twice is reconciled once, a
reconcile may ask to be called again after a delay (deadlines, backoff), and a conflict (409)
or a vanished object (404) just queues the key again, as a real work queue's rate limiter does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any, Protocol

from devcluster import statuses
from devcluster.handler import Handler, WriteOptions
from devcluster.kinds import Kind
from devcluster.store import Event

JsonObject = dict[str, Any]
Key = tuple[str, str]  # namespace, name of the object a reconciler owns
log = logging.getLogger(__name__)
_CONFLICT_RETRY = 0.05


class Reconciler(Protocol):
    """What one controller decides; `Loop` does the queueing and the retries."""

    @property
    def resources(self) -> tuple[str, ...]:
        """The storage keys whose events this reconciler reads."""

    def keys_for(self, handler: Handler, event: Event) -> Iterable[Key]:
        """Return the owned objects an event may affect."""

    def reconcile(self, handler: Handler, key: Key) -> float | None:
        """Bring one object's world in line; return seconds until it must be looked at again."""


class Loop:
    """Runs a reconciler inside devcluster, as `server.Controller` expects."""

    def __init__(self, reconciler: Reconciler) -> None:
        self.reconciler = reconciler
        self._queue: asyncio.Queue[Key] = asyncio.Queue()
        self._queued: set[Key] = set()
        self._timers: dict[Key, asyncio.TimerHandle] = {}

    def __repr__(self) -> str:
        return f"Loop({type(self.reconciler).__name__})"

    async def run(self, handler: Handler) -> None:
        """Reconcile every affected key until cancelled."""

        def listen(event: Event) -> None:
            if event.resource in self.reconciler.resources:
                for key in self.reconciler.keys_for(handler, event):
                    self._enqueue(key)

        handler.store.add_listener(listen)
        try:
            for resource in self.reconciler.resources:
                for obj in handler.store.objects(resource):
                    listen(Event("ADDED", 0, resource, obj))
            while True:
                key = await self._queue.get()
                self._queued.discard(key)
                self._step(handler, key)
        finally:
            handler.store.remove_listener(listen)
            for timer in self._timers.values():
                timer.cancel()

    def _step(self, handler: Handler, key: Key) -> None:
        try:
            delay = self.reconciler.reconcile(handler, key)
        except statuses.ApiError as err:
            log.debug("%r: retrying %s after %s", self, key, err)
            delay = _CONFLICT_RETRY
        if delay is not None:
            self._enqueue_after(key, delay)

    def _enqueue(self, key: Key) -> None:
        if key not in self._queued:
            self._queued.add(key)
            self._queue.put_nowait(key)

    def _enqueue_after(self, key: Key, delay: float) -> None:
        # Keep the earliest wake-up: a later request must not postpone a deadline.
        loop = asyncio.get_running_loop()
        current = self._timers.get(key)
        if current is not None and current.when() <= loop.time() + delay:
            return
        if current is not None:
            current.cancel()

        def fire() -> None:
            self._timers.pop(key, None)
            self._enqueue(key)

        self._timers[key] = loop.call_later(max(delay, 0.0), fire)


def kind(handler: Handler, storage_key: str) -> Kind:
    """Return the kind row stored under a key (built-in, so always there)."""
    row = handler.kinds.by_storage_key(storage_key)
    assert row is not None, storage_key
    return row


def owner_key(obj: JsonObject, owner_kind: str) -> Key | None:
    """Return the namespace and name of an object's controller of the given kind."""
    meta = obj["metadata"]
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == owner_kind:
            return meta.get("namespace", ""), ref.get("name", "")
    return None


def owned_by(objects: Iterable[JsonObject], uid: str) -> list[JsonObject]:
    """Return the objects whose controller reference names this uid."""
    return [
        o
        for o in objects
        if any(
            r.get("controller") and r.get("uid") == uid
            for r in o["metadata"].get("ownerReferences") or ()
        )
    ]


def controller_ref(owner: JsonObject) -> JsonObject:
    """Return the ownerReference a controller puts on what it creates."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def write_status(handler: Handler, storage_key: str, obj: JsonObject, status: JsonObject) -> None:
    """Write a status when it differs from the stored one."""
    if obj.get("status") == status:
        return
    meta = obj["metadata"]
    body = {**obj, "status": status}
    handler.update(
        kind(handler, storage_key),
        meta.get("namespace", ""),
        meta["name"],
        "status",
        body,
        WriteOptions(),
    )


def create(handler: Handler, storage_key: str, namespace: str, body: JsonObject) -> JsonObject:
    """Create an object through the API verbs; return what was stored."""
    return handler.create(kind(handler, storage_key), namespace, body, WriteOptions()).obj


def delete(handler: Handler, storage_key: str, obj: JsonObject) -> None:
    """Delete an object (in the background) unless it is already going."""
    meta = obj["metadata"]
    if meta.get("deletionTimestamp"):
        return
    try:
        handler.delete(
            kind(handler, storage_key),
            meta.get("namespace", ""),
            meta["name"],
            {"propagationPolicy": "Background"},
        )
    except statuses.ApiError as err:
        if err.code != 404:
            raise
