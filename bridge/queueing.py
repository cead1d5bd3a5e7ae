"""One pending batch of signals per workflow, drained by a bounded pool of senders.

Bursts coalesce: the first nudge for a workflow that nothing was sent to lately goes at once (a
new CR's workflow starts without waiting); while a batch is being sent, and for a short window
after each send, new nudges for it merge into the next batch — the highest generation wins,
owned-object changes are unioned, a deletion is kept. A workflow is never sent to by two
senders at once, so its signals arrive in order. A failed send (Temporal unreachable) goes back
into the queue with back-off, merged with anything newer: the latest state of every object is
never dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bridge.filtering import Nudge
from crds.refs import ObjectRef
from workflows import messages

logger = logging.getLogger(__name__)

MAX_NAMES = 20
_FORGET_ABOVE = 1024
"""Send times kept before the old ones (over a window) are forgotten."""
"""Owned-object names kept per batch (for the history's readability; kinds are always kept)."""


@dataclass
class Batch:
    """Signals waiting for one workflow."""

    target: ObjectRef
    spec: messages.SpecChanged | None = None
    owned: messages.OwnedChanged | None = None
    deleted: messages.Deleted | None = None
    attempts: int = 0
    traceparent: str | None = None
    """The trace the CR was created in (`activities.kube.spans`); its delivery continues it."""

    def merge(self, nudge: Nudge) -> None:
        """Fold one nudge into the batch."""
        payload = nudge.payload
        if isinstance(payload, messages.SpecChanged):
            old = self.spec or messages.SpecChanged()
            self.spec = messages.SpecChanged(
                generation=max(old.generation, payload.generation),
                resync=old.resync or payload.resync,
                version=max(old.version, payload.version),
            )
        elif isinstance(payload, messages.OwnedChanged):
            old_owned = self.owned or messages.OwnedChanged()
            kinds = sorted({*old_owned.kinds, *payload.kinds})
            names = list(dict.fromkeys([*old_owned.names, *payload.names]))[-MAX_NAMES:]
            versions = dict(old_owned.versions)
            for kind, version in payload.versions.items():
                versions[kind] = max(version, versions.get(kind, 0))
            self.owned = messages.OwnedChanged(kinds=kinds, names=names, versions=versions)
        else:
            old_deleted = self.deleted or messages.Deleted()
            gone = payload.gone or old_deleted.gone
            version = max(old_deleted.version, payload.version)
            self.deleted = messages.Deleted(gone=gone, version=version)

    def absorb(self, other: Batch) -> None:
        """Fold a newer batch into this (older, failed) one."""
        for signal, payload in other.signals():
            self.merge(Nudge(self.target, signal, payload))
        self.traceparent = other.traceparent or self.traceparent

    def signals(
        self,
    ) -> list[tuple[str, messages.SpecChanged | messages.OwnedChanged | messages.Deleted]]:
        """The signals to send, in the order a workflow should see them."""
        out: list[tuple[str, messages.SpecChanged | messages.OwnedChanged | messages.Deleted]] = []
        if self.spec is not None:
            out.append((messages.SPEC_CHANGED, self.spec))
        if self.owned is not None:
            out.append((messages.OWNED_CHANGED, self.owned))
        if self.deleted is not None:
            out.append((messages.DELETED, self.deleted))
        return out


Send = Callable[[Batch], Awaitable[None]]


@dataclass
class Coalescer:
    """Per-workflow batches and the senders that deliver them."""

    send: Send
    concurrency: int = 32
    window: float = 0.2
    max_backoff: float = 30.0
    _pending: dict[str, Batch] = field(default_factory=dict)
    _due: dict[str, float] = field(default_factory=dict)
    _in_flight: set[str] = field(default_factory=set)
    _sent_at: dict[str, float] = field(default_factory=dict)
    """When each workflow was last sent to, while that is less than a window ago (about)."""
    _queue: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    delivered: int = 0

    def put(self, nudge: Nudge, traceparent: str | None = None) -> None:
        """Queue a nudge (never blocks, never drops), with the trace its object carries."""
        key = nudge.target.workflow_id
        batch = self._pending.get(key)
        if batch is None:
            batch = self._pending[key] = Batch(nudge.target)
            since = time.monotonic() - self._sent_at.get(key, float("-inf"))
            self._schedule(key, max(0.0, self.window - since))
        batch.merge(nudge)
        batch.traceparent = traceparent or batch.traceparent

    @property
    def idle(self) -> bool:
        """Nothing pending and nothing being sent."""
        return not self._pending and not self._in_flight

    def _schedule(self, key: str, delay: float) -> None:
        self._due[key] = time.monotonic() + delay
        if key not in self._in_flight:
            self._queue.put_nowait(key)

    async def run(self) -> None:
        """Run the senders until cancelled."""
        async with asyncio.TaskGroup() as group:
            for _ in range(self.concurrency):
                group.create_task(self._sender())

    async def _sender(self) -> None:
        while True:
            key = await self._queue.get()
            if key in self._in_flight or key not in self._pending:
                continue
            wait = self._due.get(key, 0.0) - time.monotonic()
            if wait > 0:
                # Back when due: a sender that slept here would hold up batches due now.
                asyncio.get_running_loop().call_later(wait, self._queue.put_nowait, key)
                continue
            batch = self._pending.pop(key)
            self._due.pop(key, None)  # set again only if something waits for it
            self._in_flight.add(key)
            try:
                await self.send(batch)
                self.delivered += 1
            except Exception as err:
                self._retry(key, batch, err)
            finally:
                self._in_flight.discard(key)
                self._sent(key)
                if key in self._pending:
                    self._queue.put_nowait(key)

    def _sent(self, key: str) -> None:
        """Remember the send, so that what comes within a window waits for the next batch."""
        now = time.monotonic()
        if len(self._sent_at) >= _FORGET_ABOVE:  # keep only the workflows sent to lately
            self._sent_at = {k: t for k, t in self._sent_at.items() if now - t < self.window}
        self._sent_at[key] = now
        if key in self._pending:  # nudges that came during the send wait out the window
            self._due[key] = max(self._due.get(key, 0.0), now + self.window)

    def _retry(self, key: str, batch: Batch, err: Exception) -> None:
        batch.attempts += 1
        newer = self._pending.pop(key, None)
        if newer is not None:
            batch.absorb(newer)
        self._pending[key] = batch
        delay = min(self.max_backoff, 0.5 * 2 ** min(batch.attempts, 10))
        logger.warning(
            "signal to %s failed (attempt %d, retry in %.1fs): %s",
            key,
            batch.attempts,
            delay,
            err,
            extra={"workflow_id": key},  # the CR's identity on JSON log lines
        )
        self._due[key] = time.monotonic() + delay
