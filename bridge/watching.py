"""One `Watcher` per (kind, namespace), handing each named object on to the bridge.

The list-and-watch loop itself is `activities.kube.list_watch`.

One object never stops the others. Objects nested too deep arrive decoded in part
(`activities.kube.decoding`) and are handed on like any other: their metadata is whole, so their
workflows hear of them and refuse them, with a Warning Event, as invalid (the bridge itself may
only list and watch). An object without a name and uid cannot belong to a workflow and is
skipped; one whose handling raises is logged with its identity and skipped. Every watcher runs
in the bridge's one task group, so an exception leaving `run` would stop every watch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeGuard

from activities.kube.client import JSON, KubeClient
from activities.kube.list_watch import ListWatch, WatchStats
from activities.kube.vocabulary import WatchEventType
from bridge.targets import Target
from crds.refs import ObjectRef

logger = logging.getLogger(__name__)

OnEvent = Callable[[Target, str, JSON], None]
OnListed = Callable[[Target, str | None, list[JSON]], None]
"""Told every named object of a list, before each is handed to `OnEvent` as MODIFIED."""


class Watcher:
    """Keeps one kind in one namespace (or all) flowing into callbacks."""

    def __init__(
        self,
        kube: KubeClient,
        target: Target,
        namespace: str | None,
        on_event: OnEvent,
        on_listed: OnListed,
        relist_period: float = 36000.0,
        watch_timeout: int = 60,
    ) -> None:
        self.target, self._namespace = target, namespace
        self._on_event, self._on_listed = on_event, on_listed
        self._loop = ListWatch(
            kube,
            target.resource,
            namespace,
            target.label_selector,
            self._listed,
            self._event,
            relist_period=relist_period,
            watch_timeout=watch_timeout,
        )
        self.stats: WatchStats = self._loop.stats
        self.listed = self._loop.listed

    async def run(self) -> None:
        """List and watch forever (until cancelled), backing off on errors."""
        await self._loop.run()

    def _listed(self, items: list[Any], _version: str) -> None:
        objects = [item for item in items if self._named(item, "listed")]
        self._on_listed(self.target, self._namespace, objects)
        for obj in objects:
            self._deliver(WatchEventType.MODIFIED, obj)

    def _event(self, change: str, obj: Any) -> None:
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
