"""List, then watch from the list's resourceVersion; re-list on 410 Gone, errors and on a period.

One `Watcher` per (kind, namespace). After every list it reports the complete set of objects,
so the caller can notice objects that vanished while nobody was watching (a missed DELETED).
The periodic re-list (default 300 s, KubeRay's requeue period) is the backstop that makes a
missed event only ever a delay.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from activities.errors import KubeError, KubeGone
from activities.kube import JSON, KubeClient
from bridge.targets import Target

logger = logging.getLogger(__name__)

OnEvent = Callable[[Target, str, JSON], None]
OnListed = Callable[[Target, str | None, list[JSON]], None]


@dataclass
class WatchStats:
    """Counters for benchmarks and logs."""

    lists: int = 0
    events: int = 0
    gone: int = 0
    errors: int = 0


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
        self._on_listed(target, self._namespace, items)
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
                obj = event.get("object") or {}
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if event.get("type") == "BOOKMARK":
                    continue
                self.stats.events += 1
                self._on_event(self.target, str(event.get("type")), obj)
