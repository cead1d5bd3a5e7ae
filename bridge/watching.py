"""List, then watch from the list's resourceVersion; re-list on 410 Gone, errors and on a period.

One `Watcher` per (kind, namespace). After every list it reports the complete set of objects,
so the caller can notice objects that vanished while nobody was watching (a missed DELETED).
The periodic re-list (default 300 s, KubeRay's requeue period) is the backstop that makes a
missed event only ever a delay.

One object never stops the others. Objects nested too deep arrive decoded in part
(`activities.kube.decoding`) and are handed on like any other: their metadata is whole, so their
workflows hear of them and refuse them, with a Warning Event, as invalid (the bridge itself may
only list and watch). An object without a name and uid cannot belong to a workflow and is
skipped; one whose handling raises is logged with its identity and skipped. Every watcher runs
in the bridge's one task group, so an exception leaving `run` would stop every watch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from activities.kube.client import JSON, KubeClient
from activities.kube.errors import KubeError, KubeGone
from activities.kube.vocabulary import WatchEventType
from bridge.targets import Target
from crds.refs import ObjectRef

logger = logging.getLogger(__name__)

OnEvent = Callable[[Target, str, JSON], None]
OnListed = Callable[[Target, str | None, list[JSON]], None]
"""Told every named object of a list, before each is handed to `OnEvent` as MODIFIED."""


@dataclass
class WatchStats:
    """Counters for benchmarks and logs."""

    lists: int = 0
    events: int = 0
    gone: int = 0
    errors: int = 0
    skipped: int = 0
    """Objects not handed on: unnamed, or their handling raised."""


class Watcher:
    """Keeps one kind in one namespace (or all) flowing into callbacks."""

    def __init__(
        self,
        kube: KubeClient,
        target: Target,
        namespace: str | None,
        on_event: OnEvent,
        on_listed: OnListed,
        relist_period: float = 300.0,
        watch_timeout: int = 60,
    ) -> None:
        self._kube, self.target, self._namespace = kube, target, namespace
        self._on_event, self._on_listed = on_event, on_listed
        self._relist_period = relist_period
        self._watch_timeout = watch_timeout
        self.stats = WatchStats()
        self.listed = asyncio.Event()

    async def run(self) -> None:
        """List and watch forever (until cancelled), backing off on errors."""
        failures = 0
        while True:
            try:
                version = await self._list()
                failures = 0
                await self._watch(version)
            except KubeGone:
                self.stats.gone += 1
                logger.info("%s: watch version expired; re-listing", self.target.kind)
            except KubeError as err:
                failures += 1
                self.stats.errors += 1
                delay = min(30.0, 0.5 * 2 ** min(failures, 6))
                logger.warning("%s: %s; retrying in %.1fs", self.target.kind, err, delay)
                await asyncio.sleep(delay)

    async def _list(self) -> str:
        target = self.target
        items, version = await self._kube.list_versioned(
            target.resource, self._namespace, target.label_selector
        )
        self.stats.lists += 1
        objects = [item for item in items if self._named(item, "listed")]
        self._on_listed(target, self._namespace, objects)
        for obj in objects:
            self._deliver(WatchEventType.MODIFIED, obj)
        self.listed.set()
        return version

    async def _watch(self, version: str) -> None:
        """Watch until the re-list period is over; raises on errors for `run` to handle."""
        deadline = time.monotonic() + self._relist_period
        while time.monotonic() < deadline:
            remaining = max(1, min(self._watch_timeout, int(deadline - time.monotonic())))
            stream = self._kube.watch(
                self.target.resource,
                self._namespace,
                version,
                label_selector=self.target.label_selector,
                timeout_seconds=remaining,
            )
            async for event in stream:
                obj = event.get("object")
                meta = obj.get("metadata") if isinstance(obj, dict) else None
                if isinstance(meta, dict) and meta.get("resourceVersion"):
                    version = str(meta["resourceVersion"])
                if event.get("type") == WatchEventType.BOOKMARK:
                    continue
                self.stats.events += 1
                change = str(event.get("type"))
                if self._named(obj, change):
                    self._deliver(change, obj)

    def _named(self, obj: Any, event: str) -> TypeGuard[JSON]:
        """Whether `obj` is an object with a name and a uid; logs and counts one that is not."""
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if isinstance(meta, dict) and _text(meta.get("name")) and _text(meta.get("uid")):
            return True
        self.stats.skipped += 1
        logger.warning(
            "%s: skipping an object without a name and uid (%s): %s",
            self.target.kind,
            event,
            _sketch(obj),
        )
        return False

    def _deliver(self, event: str, obj: JSON) -> None:
        """Hand one object on; its failure is its own."""
        try:
            self._on_event(self.target, event, obj)
        except Exception:
            # Not swallowed: logged with its traceback and the object, counted, and the
            # object is handed on again at its next change or the next re-list. Letting it
            # out would stop every watch of the bridge, for any one object's sake.
            self.stats.skipped += 1
            meta = obj["metadata"]
            logger.exception(
                "%s %s/%s: handling its %s event failed; skipped",
                self.target.kind,
                meta.get("namespace") or "-",
                meta.get("name"),
                event,
                extra={"workflow_id": _workflow_id(self.target, meta)},
            )


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _sketch(obj: Any) -> str:
    """What can be said of an unnamed object without printing it (it may be huge, or deep)."""
    if not isinstance(obj, dict):
        return f"a {type(obj).__name__}, not a mapping"
    keys = ", ".join(sorted(str(key) for key in obj)[:10])
    return f"a mapping with keys [{keys}]"


def _workflow_id(target: Target, meta: JSON) -> str | None:
    """The CR's identity for JSON log lines (`runtime.logs`); None for objects a CR owns."""
    if not target.primary:
        return None
    # Built without validation: this runs because something about the object was wrong.
    ref = ObjectRef.model_construct(
        kind=target.kind,
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta["name"]),
        uid=str(meta["uid"]),
    )
    return ref.workflow_id
