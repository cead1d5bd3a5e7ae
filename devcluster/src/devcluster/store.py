"""The one object store: SQLite is the durable truth, memory serves reads and watches.

Every write gets the next value of one cluster-wide resourceVersion, as etcd's revision does,
and is recorded twice in one transaction: the object row and an event row. The kept events
let a watch resume from any resourceVersion newer than the compaction point, also after a
restart; older ones get 410 Gone. Listeners (watch streams, in-process controllers) are called
synchronously after each commit, so they see every change in order.
"""

from __future__ import annotations

import collections
import copy
import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

JsonObject = dict[str, Any]
ObjectKey = tuple[str, str, str]  # storage key, namespace, name
T = TypeVar("T")

PODS = "/pods"
"""The storage key of core/v1 pods: `<group>/<plural>`, the group empty for the core API."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (resource, namespace, name));
CREATE TABLE IF NOT EXISTS events (
    rv INTEGER PRIMARY KEY, type TEXT NOT NULL, resource TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


@dataclass
class Event:
    """One committed change, as watch streams and controllers receive it."""

    type: str  # ADDED, MODIFIED or DELETED
    rv: int
    resource: str
    obj: JsonObject
    old: JsonObject | None = None
    _encoded: str | None = None

    def encoded_object(self) -> str:
        """The object as JSON, encoded once however many watchers send it."""
        if self._encoded is None:
            self._encoded = json.dumps(self.obj, separators=(",", ":"))
        return self._encoded


Listener = Callable[[Event], None]


class ObjectView(Protocol):
    """The read side of a store: what the kubelet and the Services networking follow.

    `Store` is one; a node of a real API server has a mirror fed by list+watch
    (`devcluster.node.mirror`) that answers the same calls.
    """

    def get(self, resource: str, namespace: str, name: str) -> JsonObject | None:
        """Return one object, or None."""

    def objects(self, resource: str, namespace: str | None = None) -> list[JsonObject]:
        """Return a resource's objects, optionally within one namespace."""

    def add_listener(self, listener: Listener) -> None:
        """Call `listener` with every change from now on."""

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling a listener."""


_SCALARS = (str, int, float, bool, type(None))


def copied(value: T) -> T:
    """A deep copy of JSON data, about three times faster than `copy.deepcopy`.

    Every write copies the stored object it changes; with thousands of pods that copy is
    much of the server's time. Dict and list subclasses come back as plain dicts and lists;
    anything else than those and scalars is deep-copied.
    """
    return cast(T, _copied(value))


def _copied(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: _copied(v) for k, v in value.items()}
    if kind is list:
        return [_copied(v) for v in value]
    if kind in _SCALARS:
        return value
    # A decoded request body's objects are a dict subclass (`decoding`): stored plain.
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return copy.deepcopy(value)


def object_key(resource: str, obj: JsonObject) -> ObjectKey:
    """Return where an object lives in the store."""
    meta = obj["metadata"]
    return (resource, meta.get("namespace", ""), meta["name"])


class Store:
    """Objects by resource, namespace and name, with a bounded event history."""

    def __init__(self, path: Path, history_limit: int = 100_000) -> None:
        self._path = path
        self._limit = history_limit
        self._db: sqlite3.Connection | None = None
        self._objects: dict[str, dict[tuple[str, str], JsonObject]] = {}
        self._history: collections.deque[Event] = collections.deque()
        self._by_uid: dict[str, ObjectKey] = {}
        self._dependents: dict[str, set[ObjectKey]] = {}
        self._labelled: dict[tuple[str, str, str, str], set[str]] = {}
        """(storage key, namespace, label key, label value) -> names: label selectors' index."""
        self._listeners: list[Listener] = []
        self.rv = 0
        self.compacted_rv = 0

    def open(self) -> None:
        """Open (or create) the database and load every object and the kept events."""
        self._path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        self._db = db
        for resource, body in db.execute("SELECT resource, body FROM objects"):
            self._index(resource, json.loads(body))
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        self.rv = int(meta.get("rv", 0))
        self.compacted_rv = int(meta.get("compacted", 0))
        rows = db.execute(
            "SELECT rv, type, resource, body FROM events ORDER BY rv DESC LIMIT ?", (self._limit,)
        ).fetchall()
        for rv, kind, resource, body in reversed(rows):
            self._history.append(Event(kind, rv, resource, json.loads(body)))
        if self._history:
            self.compacted_rv = max(self.compacted_rv, self._history[0].rv - 1)
        else:
            self.compacted_rv = self.rv

    def close(self) -> None:
        """Close the database; memory state stays readable."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def add_listener(self, listener: Listener) -> None:
        """Call `listener` with every event committed from now on."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling a listener."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    # Reads. Callers must treat returned objects as read-only; they are the stored copies.

    def get(self, resource: str, namespace: str, name: str) -> JsonObject | None:
        """Return one object, or None."""
        return self._objects.get(resource, {}).get((namespace, name))

    def objects(self, resource: str, namespace: str | None = None) -> list[JsonObject]:
        """Return a resource's objects in key order, optionally within one namespace."""
        items = self._objects.get(resource, {})
        keys = sorted(k for k in items if namespace is None or k[0] == namespace)
        return [items[k] for k in keys]

    def selected(self, resource: str, namespace: str, selector: dict[str, str]) -> list[JsonObject]:
        """Return the objects in `namespace` carrying every label of a map-form selector.

        By name; an empty selector selects them all. The label index answers it, so a
        controller's lookup costs what it finds, not the namespace's size.
        """
        if not selector:
            return self.objects(resource, namespace)
        names = min(
            (self._labelled.get((resource, namespace, k, v), set()) for k, v in selector.items()),
            key=len,
        )
        items = self._objects.get(resource, {})
        found = (items[(namespace, name)] for name in sorted(names))
        return [o for o in found if _carries(o, selector)]

    def resources(self) -> list[str]:
        """Return every storage key that holds at least one object."""
        return [r for r, items in self._objects.items() if items]

    def by_uid(self, uid: str) -> ObjectKey | None:
        """Return where the object with this uid lives, if it exists."""
        return self._by_uid.get(uid)

    def dependents(self, owner_uid: str) -> list[ObjectKey]:
        """Return the objects whose ownerReferences name this uid."""
        return sorted(self._dependents.get(owner_uid, ()))

    def owner_uids(self) -> list[str]:
        """Return every uid some object names as its owner."""
        return [uid for uid, deps in self._dependents.items() if deps]

    def history_since(self, rv: int) -> list[Event] | None:
        """Return the events after `rv`, or None if some of them were compacted away."""
        if rv < self.compacted_rv:
            return None
        if not self._history or rv >= self._history[-1].rv:
            return []
        # History is ordered by rv; scan from the end since resumes are usually recent.
        out: list[Event] = []
        for event in reversed(self._history):
            if event.rv <= rv:
                break
            out.append(event)
        out.reverse()
        return out

    # Writes.

    def put(self, resource: str, obj: JsonObject) -> Event:
        """Create or replace an object, stamping the next resourceVersion on it."""
        namespace, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
        old = self.get(resource, namespace, name)
        rv = self.rv + 1
        obj["metadata"]["resourceVersion"] = str(rv)
        event = Event("MODIFIED" if old else "ADDED", rv, resource, obj, old)
        body = event.encoded_object()
        self._write(
            event,
            "INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)",
            (resource, namespace, name, rv, body),
        )
        if old is not None:
            self._unindex(resource, old)
        self._index(resource, obj)
        self._publish(event)
        return event

    def remove(
        self, resource: str, namespace: str, name: str, last: JsonObject | None = None
    ) -> Event | None:
        """Delete an object; its DELETED event carries `last` (or the stored state) at a new rv."""
        old = self.get(resource, namespace, name)
        if old is None:
            return None
        base = last if last is not None else old
        final = {**base, "metadata": {**base["metadata"], "resourceVersion": str(self.rv + 1)}}
        event = Event("DELETED", self.rv + 1, resource, final, old)
        self._write(
            event,
            "DELETE FROM objects WHERE resource = ? AND namespace = ? AND name = ?",
            (resource, namespace, name),
        )
        self._unindex(resource, old)
        self._publish(event)
        return event

    def _write(self, event: Event, statement: str, params: Iterable[Any]) -> None:
        db = self._require_db()
        db.execute("BEGIN")
        try:
            db.execute(statement, tuple(params))
            db.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?)",
                (event.rv, event.type, event.resource, event.encoded_object()),
            )
            db.execute("INSERT OR REPLACE INTO meta VALUES ('rv', ?)", (event.rv,))
            self._compact(db)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.rv = event.rv
        self._history.append(event)

    def _compact(self, db: sqlite3.Connection) -> None:
        # Trim in batches so the delete runs once per tenth of the limit, not per write.
        if len(self._history) < self._limit + max(1, self._limit // 10):
            return
        while len(self._history) > self._limit - 1:
            self.compacted_rv = self._history.popleft().rv
        db.execute("DELETE FROM events WHERE rv <= ?", (self.compacted_rv,))
        db.execute("INSERT OR REPLACE INTO meta VALUES ('compacted', ?)", (self.compacted_rv,))

    def compact_all(self) -> None:
        """Drop the whole event history, as an etcd compaction at the current revision does."""
        db = self._require_db()
        self._history.clear()
        self.compacted_rv = self.rv
        db.execute("DELETE FROM events")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('compacted', ?)", (self.rv,))

    def _require_db(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("store is not open")
        return self._db

    def _publish(self, event: Event) -> None:
        for listener in list(self._listeners):
            listener(event)

    def _index(self, resource: str, obj: JsonObject) -> None:
        key = object_key(resource, obj)
        self._objects.setdefault(resource, {})[key[1:]] = obj
        meta = obj["metadata"]
        if uid := meta.get("uid"):
            self._by_uid[uid] = key
        for ref in meta.get("ownerReferences") or ():
            self._dependents.setdefault(ref.get("uid", ""), set()).add(key)
        for label, value in (meta.get("labels") or {}).items():
            if isinstance(value, str):  # validated on write; a stored oddity is just not found
                self._labelled.setdefault((resource, key[1], label, value), set()).add(key[2])

    def _unindex(self, resource: str, obj: JsonObject) -> None:
        key = object_key(resource, obj)
        self._objects.get(resource, {}).pop(key[1:], None)
        meta = obj["metadata"]
        if (uid := meta.get("uid")) and self._by_uid.get(uid) == key:
            del self._by_uid[uid]
        for ref in meta.get("ownerReferences") or ():
            deps = self._dependents.get(ref.get("uid", ""))
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self._dependents[ref.get("uid", "")]
        for label, value in (meta.get("labels") or {}).items():
            index = (resource, key[1], label, value)
            names = self._labelled.get(index) if isinstance(value, str) else None
            if names is not None:
                names.discard(key[2])
                if not names:
                    del self._labelled[index]


def _carries(obj: JsonObject, selector: dict[str, str]) -> bool:
    labels = obj["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())
