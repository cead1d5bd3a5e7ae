"""List, then watch from the list's resourceVersion; re-list on 410 Gone, errors and on a period.

The loop behind the bridge's watchers and the worker's informers. After every list the caller
is told the complete set of objects, so it can notice objects that vanished while nobody was
watching (a missed DELETED). A watch that has not failed has missed nothing, so the loop lists
again when its stream fails, as client-go's reflectors do; the worker's copies only then
(`relist_period=None`), the bridge also every 10 hours while its watches hold (controller-
runtime's sync period, when KubeRay's reconcilers are handed every object again).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from activities.kube.client import KubeClient, Resource
from activities.kube.errors import KubeError, KubeGone, KubeNotFound
from activities.kube.vocabulary import WatchEventType

logger = logging.getLogger(__name__)

OnListed = Callable[[list[Any], str], None]
"""Told every item of a list (as decoded: not always a named object) and its resourceVersion."""
OnEvent = Callable[[str, Any], None]
"""Told each watch event's type and object (bookmarks are not handed on)."""
OnVersion = Callable[[str], None]
"""Told each resourceVersion the stream reaches, bookmarks included."""


@dataclass
class WatchStats:
    """Counters for benchmarks and logs."""

    lists: int = 0
    events: int = 0
    gone: int = 0
    errors: int = 0
    skipped: int = 0
    """Objects not handed on: unnamed, or their handling raised (counted by the caller)."""


class ListWatch:
    """Keeps one resource in one namespace (or all) flowing into callbacks."""

    def __init__(
        self,
        kube: KubeClient,
        resource: Resource,
        namespace: str | None,
        label_selector: str,
        on_listed: OnListed,
        on_event: OnEvent,
        on_version: OnVersion | None = None,
        relist_period: float | None = 300.0,
        watch_timeout: int = 60,
    ) -> None:
        self._kube, self._resource, self._namespace = kube, resource, namespace
        self._selector = label_selector
        self._on_listed, self._on_event, self._on_version = on_listed, on_event, on_version
        self._relist_period = relist_period
        self._watch_timeout = watch_timeout
        self.stats = WatchStats()
        self.listed = asyncio.Event()
        """Set by the first list; stays set (the bridge's readiness)."""
        self.broken = False
        """The stream failed and no list has succeeded since: what was handed on may be old."""

    async def run(self) -> None:
        """List and watch forever (until cancelled), backing off on errors."""
        failures = 0
        what = self._resource.plural
        while True:
            try:
                version = await self._list()
                failures = 0
                await self._watch(version)
            except KubeGone:
                self.broken = True
                self.stats.gone += 1
                logger.info("%s: watch version expired; re-listing", what)
            except KubeError as err:
                self.broken = True
                failures += 1
                self.stats.errors += 1
                delay = min(30.0, 0.5 * 2 ** min(failures, 6))
                reason: object = err
                if isinstance(err, KubeNotFound):  # a collection is never 404, but for its kind
                    reason = f"not served by the API server: is its CRD installed? ({err})"
                logger.warning("%s: %s; retrying in %.1fs", what, reason, delay)
                await asyncio.sleep(delay)

    async def _list(self) -> str:
        items, version = await self._kube.list_versioned(
            self._resource, self._namespace, self._selector
        )
        self.stats.lists += 1
        self._on_listed(items, version)
        self._reached(version)
        self.broken = False
        self.listed.set()
        return version

    async def _watch(self, version: str) -> None:
        """Watch until the re-list period is over (None: for ever); raises on errors for `run`."""
        period = self._relist_period
        deadline = None if period is None else time.monotonic() + period
        while deadline is None or time.monotonic() < deadline:
            remaining = self._watch_timeout
            if deadline is not None:
                remaining = max(1, min(remaining, int(deadline - time.monotonic())))
            stream = self._kube.watch(
                self._resource,
                self._namespace,
                version,
                label_selector=self._selector,
                timeout_seconds=remaining,
            )
            async for event in stream:
                obj = event.get("object")
                meta = obj.get("metadata") if isinstance(obj, dict) else None
                if isinstance(meta, dict) and meta.get("resourceVersion"):
                    version = str(meta["resourceVersion"])
                if event.get("type") != WatchEventType.BOOKMARK:
                    self.stats.events += 1
                    self._on_event(str(event.get("type")), obj)
                self._reached(version)

    def _reached(self, version: str) -> None:
        if self._on_version is not None:
            self._on_version(version)
