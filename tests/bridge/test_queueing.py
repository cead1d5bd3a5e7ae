"""Coalescing, ordering and retries of the signal queue."""

from __future__ import annotations

import asyncio
import contextlib

from bridge.filtering import Nudge
from bridge.queueing import Batch, Coalescer
from crds.refs import ObjectRef
from tests.eventually import eventually
from workflows import messages

REF = ObjectRef(kind="RayJob", namespace="ns", name="j", uid="u")


def spec(generation: int, resync: bool = False) -> Nudge:
    change = messages.SpecChanged(generation=generation, resync=resync)
    return Nudge(REF, messages.SPEC_CHANGED, change)


def test_batch_merges_to_the_latest_state() -> None:
    batch = Batch(REF)
    batch.merge(spec(3))
    batch.merge(spec(2, resync=True))
    owned = messages.OwnedChanged(kinds=["Pod"], names=["a"])
    batch.merge(Nudge(REF, messages.OWNED_CHANGED, owned))
    more = messages.OwnedChanged(kinds=["Job"], names=["b"])
    batch.merge(Nudge(REF, messages.OWNED_CHANGED, more))
    batch.merge(Nudge(REF, messages.DELETED, messages.Deleted(gone=True)))
    batch.merge(Nudge(REF, messages.DELETED, messages.Deleted(gone=False)))
    assert batch.signals() == [
        ("spec_changed", messages.SpecChanged(generation=3, resync=True)),
        ("owned_changed", messages.OwnedChanged(kinds=["Job", "Pod"], names=["a", "b"])),
        ("deleted", messages.Deleted(gone=True)),
    ]


async def test_burst_coalesces_and_failures_retry_without_loss() -> None:
    sent: list[int] = []
    failures = iter([True, False])

    async def send(batch: Batch) -> None:
        if next(failures, False):
            raise ConnectionError("temporal down")
        assert batch.spec is not None
        sent.append(batch.spec.generation)

    queue = Coalescer(send, concurrency=4, window=0.05, max_backoff=0.1)
    runner = asyncio.create_task(queue.run())
    try:
        for generation in range(1, 101):
            queue.put(spec(generation))
        await eventually(lambda: queue.idle and sent, message="delivery")
        assert sent[-1] == 100 and len(sent) <= 3
    finally:
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner


async def test_a_first_nudge_goes_at_once_and_what_follows_waits_the_window() -> None:
    """A new CR's workflow starts without waiting the window; nudges within a window after a
    send (a new cluster's pods turning up one by one) still coalesce into one batch."""
    sent: list[int] = []

    async def send(batch: Batch) -> None:
        assert batch.spec is not None
        sent.append(batch.spec.generation)

    queue = Coalescer(send, concurrency=4, window=3600)  # a window no test waits out
    runner = asyncio.create_task(queue.run())
    try:
        queue.put(spec(1))
        await eventually(lambda: sent == [1], message="the first nudge, sent at once")
        for generation in range(2, 52):
            queue.put(spec(generation))
        # Held for the window after the first send, as one batch of the latest generation.
        assert sent == [1] and not queue.idle
        assert [b.spec.generation for b in queue._pending.values() if b.spec] == [51]
    finally:
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner


async def test_a_batch_waiting_out_its_window_holds_no_sender() -> None:
    """Regression: a sender slept until the batch it took was due, so a few workflows signalled
    in the window before held up every other workflow's batch, due or not."""
    sent: list[str] = []

    async def send(batch: Batch) -> None:
        sent.append(batch.target.name)

    queue = Coalescer(send, concurrency=1, window=3600)  # one sender; a window no test waits out
    runner = asyncio.create_task(queue.run())
    try:
        queue.put(spec(1))
        await eventually(lambda: sent == ["j"], message="the first nudge, sent at once")
        queue.put(spec(2))  # due in an hour
        other = ObjectRef(kind="RayJob", namespace="ns", name="k", uid="v")
        queue.put(Nudge(other, messages.SPEC_CHANGED, messages.SpecChanged(generation=1)))
        await eventually(lambda: sent == ["j", "k"], message="the other workflow's nudge")
    finally:
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner


def test_a_batch_keeps_the_newest_version_of_each_kind() -> None:
    batch = Batch(REF)
    for kind, version in [("Pod", 7), ("Pod", 5), ("Job", 3)]:
        change = messages.OwnedChanged(kinds=[kind], versions={kind: version})
        batch.merge(Nudge(REF, messages.OWNED_CHANGED, change))
    ((_, merged),) = batch.signals()
    assert isinstance(merged, messages.OwnedChanged)
    assert merged.versions == {"Pod": 7, "Job": 3}


async def test_nothing_is_kept_of_workflows_sent_to_and_done_with() -> None:
    """A bridge sends to one workflow per CR it ever saw: its queue must not grow with them."""

    async def send(batch: Batch) -> None:
        return None

    queue = Coalescer(send, concurrency=4, window=0.0)
    runner = asyncio.create_task(queue.run())
    try:
        for index in range(200):
            ref = ObjectRef(kind="RayCluster", namespace="ns", name=f"c{index}", uid=f"u{index}")
            queue.put(Nudge(ref, messages.SPEC_CHANGED, messages.SpecChanged(generation=1)))
        await eventually(lambda: queue.idle and queue.delivered == 200, message="delivery")
        assert queue._due == {}
    finally:
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner
