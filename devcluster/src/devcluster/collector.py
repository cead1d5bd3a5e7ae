"""Deletion that outlives the DELETE request: garbage collection, finalizers, namespaces.

kube-controller-manager's garbage collector and namespace controller, and apiextensions'
CR cleanup, as one in-process controller over store events. It is also the reference for the
controller hook: it subscribes to the store, reacts to each event, and writes only through the
handler's verbs, so its writes are validated and watched like any client's.

* An object whose owners are all gone is deleted; one that lost only some owners has the
  dangling references removed.
* `foregroundDeletion`: dependents are deleted first; the owner goes once no dependent with
  `blockOwnerDeletion` remains. `orphan`: dependents lose the reference, the owner goes.
* A terminating namespace is emptied, then finalized; a deleted CRD's objects are deleted
  before the CRD.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from devcluster import statuses
from devcluster.crds import CRD_GROUP, CRD_PLURAL
from devcluster.handler import CRD_CLEANUP, FOREGROUND, ORPHAN, Handler, WriteOptions
from devcluster.kinds import Kind
from devcluster.store import Event, ObjectKey

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)
_CRD_KEY = f"{CRD_GROUP}/{CRD_PLURAL}"
_NAMESPACES = "/namespaces"


class Collector:
    """The garbage collector and namespace/CRD cleanup, run inside devcluster."""

    def __init__(self) -> None:
        self._handler: Handler | None = None

    async def run(self, handler: Handler) -> None:
        """React to every store event until cancelled."""
        self._handler = handler
        queue: asyncio.Queue[Event] = asyncio.Queue()
        handler.store.add_listener(queue.put_nowait)
        try:
            self._resync()
            while True:
                event = await queue.get()
                try:
                    self._react(event)
                except statuses.ApiError as err:
                    # Another writer got there first (409) or the object is gone (404): the
                    # event that change produced brings us back here.
                    log.debug("collector step skipped: %s", err)
        finally:
            handler.store.remove_listener(queue.put_nowait)

    @property
    def handler(self) -> Handler:
        """The handler the collector writes through."""
        assert self._handler is not None, "collector is not running"
        return self._handler

    def _resync(self) -> None:
        store = self.handler.store
        for resource in store.resources():
            for obj in store.objects(resource):
                self._react(Event("ADDED", 0, resource, obj))

    def _react(self, event: Event) -> None:
        obj = event.obj
        meta = obj["metadata"]
        if event.type == "DELETED":
            for key in self.handler.store.dependents(meta.get("uid", "")):
                self._check_dependent(key)
        elif meta.get("ownerReferences"):
            self._check_dependent((event.resource, meta.get("namespace", ""), meta["name"]))
        if event.type != "DELETED" and meta.get("deletionTimestamp"):
            self._finalize(event.resource, obj)
        # A change to a dependent may release an owner, namespace or CRD waiting for it.
        for ref in meta.get("ownerReferences") or ():
            if owner := self._live_by_uid(ref.get("uid", "")):
                self._finalize(owner[0], owner[1])
        namespace = meta.get("namespace")
        ns = self.handler.store.get(_NAMESPACES, "", namespace) if namespace else None
        if ns is not None and ns["metadata"].get("deletionTimestamp"):
            self._finalize(_NAMESPACES, ns)
        self._maybe_release_crd(event.resource)

    def _live_by_uid(self, uid: str) -> tuple[str, JsonObject] | None:
        key = self.handler.store.by_uid(uid)
        if key is None:
            return None
        obj = self.handler.store.get(*key)
        if obj is None or not obj["metadata"].get("deletionTimestamp"):
            return None
        return key[0], obj

    def _kind(self, resource: str) -> Kind | None:
        return self.handler.kinds.by_storage_key(resource)

    def _check_dependent(self, key: ObjectKey) -> None:
        store = self.handler.store
        obj = store.get(*key)
        kind = self._kind(key[0])
        if obj is None or kind is None:
            return
        refs = obj["metadata"].get("ownerReferences") or []
        alive = [r for r in refs if store.by_uid(r.get("uid", "")) is not None]
        if not alive:
            if not obj["metadata"].get("deletionTimestamp"):
                self.handler.delete(kind, key[1], key[2], {"propagationPolicy": "Background"})
        elif len(alive) < len(refs):
            self._set_owner_refs(kind, obj, alive)

    def _set_owner_refs(self, kind: Kind, obj: JsonObject, refs: list[JsonObject]) -> None:
        new = copy.deepcopy(obj)
        new["metadata"]["ownerReferences"] = refs
        if not refs:
            del new["metadata"]["ownerReferences"]
        meta = new["metadata"]
        self.handler.update(kind, meta.get("namespace", ""), meta["name"], "", new, WriteOptions())

    def _remove_finalizer(self, kind: Kind, obj: JsonObject, finalizer: str) -> None:
        new = copy.deepcopy(obj)
        meta = new["metadata"]
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != finalizer]
        self.handler.update(kind, meta.get("namespace", ""), meta["name"], "", new, WriteOptions())

    def _finalize(self, resource: str, obj: JsonObject) -> None:
        kind = self._kind(resource)
        if kind is None:
            return
        finalizers = obj["metadata"].get("finalizers") or []
        if FOREGROUND in finalizers:
            self._delete_in_foreground(kind, obj)
        elif ORPHAN in finalizers:
            self._orphan(kind, obj)
        elif resource == _NAMESPACES:
            self._empty_namespace(kind, obj)
        elif resource == _CRD_KEY and CRD_CLEANUP in finalizers:
            self._maybe_release_crd(self._crd_resource(obj))

    def _delete_in_foreground(self, kind: Kind, owner: JsonObject) -> None:
        store, uid = self.handler.store, owner["metadata"]["uid"]
        blocking = 0
        for key in store.dependents(uid):
            dependent, dep_kind = store.get(*key), self._kind(key[0])
            if dependent is None or dep_kind is None:
                continue
            ref = next(r for r in dependent["metadata"]["ownerReferences"] if r.get("uid") == uid)
            blocking += bool(ref.get("blockOwnerDeletion"))
            if not dependent["metadata"].get("deletionTimestamp"):
                self.handler.delete(dep_kind, key[1], key[2], {"propagationPolicy": "Foreground"})
        if blocking == 0:
            current = store.get(
                kind.storage_key, owner["metadata"].get("namespace", ""), owner["metadata"]["name"]
            )
            if current is not None:
                self._remove_finalizer(kind, current, FOREGROUND)

    def _orphan(self, kind: Kind, owner: JsonObject) -> None:
        store, uid = self.handler.store, owner["metadata"]["uid"]
        for key in store.dependents(uid):
            dependent, dep_kind = store.get(*key), self._kind(key[0])
            if dependent is not None and dep_kind is not None:
                refs = dependent["metadata"]["ownerReferences"]
                self._set_owner_refs(dep_kind, dependent, [r for r in refs if r.get("uid") != uid])
        self._remove_finalizer(kind, owner, ORPHAN)

    def _empty_namespace(self, kind: Kind, namespace: JsonObject) -> None:
        store, name = self.handler.store, namespace["metadata"]["name"]
        remaining = 0
        for row in self.handler.kinds:
            if not row.namespaced or row.storage_version not in ("", row.version):
                continue
            for obj in store.objects(row.storage_key, name):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    self.handler.delete(
                        row, name, obj["metadata"]["name"], {"propagationPolicy": "Background"}
                    )
        if remaining == 0 and namespace.get("spec", {}).get("finalizers"):
            current = store.get(_NAMESPACES, "", name)
            if current is not None:
                final = copy.deepcopy(current)
                final["spec"]["finalizers"] = []
                self.handler.update(kind, "", name, "finalize", final, WriteOptions())

    @staticmethod
    def _crd_resource(crd: JsonObject) -> str:
        spec = crd.get("spec") or {}
        return f"{spec.get('group', '')}/{(spec.get('names') or {}).get('plural', '')}"

    def _maybe_release_crd(self, resource: str) -> None:
        store = self.handler.store
        crd_name = resource.split("/", 1)[1] + "." + resource.split("/", 1)[0]
        crd = store.get(_CRD_KEY, "", crd_name) if resource != _CRD_KEY else None
        if crd is None or not crd["metadata"].get("deletionTimestamp"):
            return
        if CRD_CLEANUP not in (crd["metadata"].get("finalizers") or []):
            return
        kind = self._kind(resource)
        leftovers = store.objects(resource)
        for obj in leftovers:
            if kind is not None and not obj["metadata"].get("deletionTimestamp"):
                meta = obj["metadata"]
                self.handler.delete(kind, meta.get("namespace", ""), meta["name"], {})
        if not leftovers:
            crd_kind = self._kind(_CRD_KEY)
            assert crd_kind is not None
            self._remove_finalizer(crd_kind, crd, CRD_CLEANUP)
