"""A watched copy of one resource in the worker, read instead of listing from the API server.

KubeRay's controllers read their informers' caches; so do our activities, for the objects read
on every pass (a RayCluster's pods). Two rules keep a cached read as good as a live one:

* **As new as the news.** The bridge's signal names the newest resourceVersion behind it; a
  read first waits (briefly) until the copy has reached that version, else it reads live. A
  copy that is behind the event that woke the workflow would hide that very event.
* **Only while whole.** Until the first list, and after the stream broke until the next list
  succeeds, the copy answers nothing and reads go live.

It lists again only when its stream fails (KubeRay's informers do the same): an unbroken watch
has missed nothing, so a periodic list of every object would only load the API server.

The objects the workflow itself just created may still be missing; its expectations cover
that, as KubeRay's do. resourceVersions are compared as numbers, as the API server's own watch
cache does (they are etcd revisions); one that is not a number never counts as reached.
Objects are kept as compact JSON, and only what the readers read of them (`keep`; by default
all but managedFields): a running Ray head pod's essentials take about 1.3 KiB, the whole
pod 3.3 KiB as JSON and several times that parsed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from activities.kube.client import JSON, KubeClient, Resource
from activities.kube.list_watch import ListWatch
from activities.kube.recent import version_number
from activities.kube.vocabulary import WatchEventType

logger = logging.getLogger(__name__)

Key = tuple[str, str]
"""(namespace, name)."""

CATCH_UP = 2.0
"""Seconds a read waits for a copy to reach the version the bridge reported."""


def _nothing(obj: JSON) -> None:
    return None


def _without_managed_fields(obj: JSON) -> JSON:
    meta = obj["metadata"]
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


class Informer:
    """One resource's objects in some namespaces, indexed by the value of one label.

    Which objects: those `label_selector` selects; by default those that carry the index label,
    all of them with "".

    `summarize` keeps a small digest of each object beside it (None: none), for a reader that
    goes over all of them often (`summaries`) and would otherwise decode every object each time.
    """

    def __init__(
        self,
        kube: KubeClient,
        resource: Resource,
        index_label: str,
        label_selector: str | None = None,
        namespaces: Sequence[str | None] = (None,),
        relist_period: float | None = None,
        keep: Callable[[JSON], JSON] = _without_managed_fields,
        summarize: Callable[[JSON], object | None] = _nothing,
    ) -> None:
        self._label = index_label
        self._summarize = summarize
        self._summaries: dict[Key, object] = {}
        self._what = resource.plural
        self._keep_of = keep
        self._objects: dict[Key, bytes] = {}
        self._labelled: dict[Key, str] = {}
        self._uids: dict[Key, str] = {}
        """Whose object each name is now, so `gone` need not decode it."""
        self._index: dict[Key, set[str]] = {}
        """(namespace, label value) -> names."""
        self._versions: dict[str | None, int] = {}
        """The version each namespace's stream has reached (`None`: the all-namespaces one).

        Kept apart: one stream ahead of another says nothing about the other's objects."""
        self._moved = asyncio.Event()
        self._stopped = False
        self._loops = {
            namespace: ListWatch(
                kube,
                resource,
                namespace,
                index_label if label_selector is None else label_selector,
                functools.partial(self._listed, namespace),
                self._event,
                functools.partial(self._reached, namespace),
                relist_period=relist_period,
            )
            for namespace in namespaces
        }

    async def run(self) -> None:
        """Keep the copy until cancelled; once stopped, for whatever reason, it answers nothing."""
        try:
            async with asyncio.TaskGroup() as group:
                for loop in self._loops.values():
                    group.create_task(loop.run())
        except Exception:  # not the worker's end: its passes read live from now on
            logger.exception("the copy of %s stopped; reads go to the API server", self._what)
        finally:
            self._stopped = True

    @property
    def whole(self) -> bool:
        """Whether every namespace is listed and its stream unbroken since."""
        return all(self._answers(namespace) for namespace in self._loops)

    async def reached(self, namespace: str, version: int, patience: float) -> bool:
        """Whether the copy of `namespace` is whole and at `version` or newer.

        Waits up to `patience` s for the version; False for a namespace nobody watches.
        """
        stream = namespace if namespace in self._loops else None
        if stream not in self._loops or not self._answers(stream):
            return False
        try:
            async with asyncio.timeout(patience):
                while self._versions.get(stream, 0) < version:
                    await self._moved.wait()
        except TimeoutError:
            return False
        return self._answers(stream)

    def _answers(self, stream: str | None) -> bool:
        loop = self._loops[stream]
        return not self._stopped and loop.listed.is_set() and not loop.broken

    def get(self, namespace: str, name: str) -> JSON | None:
        """The object, when the copy of its namespace is whole and holds it (else: ask live).

        Only a positive answer: an object the copy lacks may be one it has not seen yet.
        """
        stream = namespace if namespace in self._loops else None
        if stream not in self._loops or not self._answers(stream):
            return None
        data = self._objects.get((namespace, name))
        return None if data is None else json.loads(data)

    async def seen(self, namespace: str, version: int) -> bool:
        """Whether the copy of `namespace` is whole and has reached `version`.

        `version` is one the reader knows of (its write, the bridge's news); waits up to
        `CATCH_UP` s for it. Never for version 0: there is nothing known to have seen.
        """
        return bool(version) and await self.reached(namespace, version, CATCH_UP)

    def gone(self, namespace: str, name: str, uid: str, as_of: int) -> bool:
        """Whether the copy saw the object `uid` go from under `name`.

        `as_of` is a version at which the object existed (its resourceVersion when read): a
        copy of `namespace` that is whole, has reached it and holds no object `uid` under
        `name` saw it deleted, or re-created under its name, since. False when the copy cannot
        tell: behind `as_of` (it may not have seen the object yet), not whole, a namespace
        nobody watches, or version 0.
        """
        stream = namespace if namespace in self._loops else None
        if not as_of or stream not in self._loops or not self._answers(stream):
            return False
        if self._versions.get(stream, 0) < as_of:
            return False
        return self._uids.get((namespace, name)) != uid

    def version(self, namespace: str) -> int:
        """The version the copy of `namespace` has reached: every event up to it is in the copy."""
        return self._versions.get(namespace if namespace in self._loops else None, 0)

    def labelled(self, namespace: str, value: str) -> list[JSON]:
        """The objects in `namespace` whose index label is `value`."""
        names = sorted(self._index.get((namespace, value), ()))
        return [json.loads(self._objects[(namespace, name)]) for name in names]

    def summaries(self) -> list[object]:
        """The digests of the objects held now (of every namespace), while the copy is whole.

        Empty while it is not: a reader of all of them waits for a copy it can trust.
        """
        return list(self._summaries.values()) if self.whole else []

    def __len__(self) -> int:
        return len(self._objects)

    def _listed(self, namespace: str | None, items: list[Any], version: str) -> None:
        for key in [k for k in self._objects if namespace is None or k[0] == namespace]:
            self._forget(key)
        for item in items:
            self._keep(item)

    def _event(self, change: str, obj: Any) -> None:
        if change == WatchEventType.DELETED:
            key = _key(obj)
            if key is not None:
                self._forget(key)
        elif change in (WatchEventType.ADDED, WatchEventType.MODIFIED):
            self._keep(obj)

    def _reached(self, stream: str | None, version: str) -> None:
        number = version_number(version)
        if number > self._versions.get(stream, 0):
            self._versions[stream] = number
            moved, self._moved = self._moved, asyncio.Event()
            moved.set()

    def _keep(self, obj: Any) -> None:
        key = _key(obj)
        if key is None:
            return
        self._forget(key)
        kept = self._keep_of(obj)
        self._objects[key] = json.dumps(kept, separators=(",", ":")).encode()
        summary = self._summarize(obj)
        if summary is not None:
            self._summaries[key] = summary
        uid = obj["metadata"].get("uid")
        if isinstance(uid, str):
            self._uids[key] = uid
        value = (obj["metadata"].get("labels") or {}).get(self._label)
        if isinstance(value, str):
            self._labelled[key] = value
            self._index.setdefault((key[0], value), set()).add(key[1])

    def _forget(self, key: Key) -> None:
        self._objects.pop(key, None)
        self._summaries.pop(key, None)
        self._uids.pop(key, None)
        value = self._labelled.pop(key, None)
        if value is not None:
            names = self._index.get((key[0], value), set())
            names.discard(key[1])
            if not names:
                self._index.pop((key[0], value), None)


async def cached_or_live(
    kube: KubeClient, copy: Informer | None, resource: Resource, namespace: str, name: str
) -> JSON | None:
    """The object from the copy when it holds it, else from the API server (None: absent)."""
    cached = None if copy is None else copy.get(namespace, name)
    return cached if cached is not None else await kube.get_or_none(resource, namespace, name)


async def cached_or_absent(
    kube: KubeClient, copy: Informer | None, resource: Resource, namespace: str, name: str
) -> JSON | None:
    """As `cached_or_live`, but a whole copy that lacks the object says it is absent.

    For a reader that made nothing yet the copy could lag behind (a first pass): the copy,
    listed and watched, holds every object made before its last event, as KubeRay's cache.
    """
    if copy is not None and await copy.reached(namespace, 0, 0):  # whole now, no waiting
        return copy.get(namespace, name)
    return await cached_or_live(kube, copy, resource, namespace, name)


async def same_as_of(
    kube: KubeClient,
    copy: Informer | None,
    resource: Resource,
    key: Key,
    uid: str,
    as_of: int,
) -> JSON | None:
    """The object `key` names while it is the one with `uid`: from the copy, else live.

    From the copy once it has reached `as_of` (the newest version the reader wrote or heard
    of) and holds that object; never for `as_of` 0 (nothing known to wait for). None when it
    is gone or re-created under its name.
    """
    if copy is not None and await copy.seen(key[0], as_of):
        cached = copy.get(*key)
        if cached is not None and cached["metadata"].get("uid") == uid:
            return cached
    return await kube.get_same(resource, *key, uid)


def _key(obj: Any) -> Key | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return None
    name, namespace = meta.get("name"), meta.get("namespace")
    if not (isinstance(name, str) and name and isinstance(namespace, str) and namespace):
        return None
    return namespace, name
