"""One resync timer kept across a workflow's waits, instead of one timer per wait.

A wait with a timeout starts a timer and cancels it when a signal ends the wait first: a billed
action and two history events for every pass. `ResyncTimer` keeps one timer running while it
wakes the workflow no later than the next wait needs, and replaces it only when a wait needs
an earlier wake-up, or after it fired. A timer that fires earlier than the wait in progress
asked for (it was started for a shorter one) brings a resync pass forward; it is never late.

A timer started for a much shorter wait than the one now in progress only brings a pass that
looks again at something already settled (a RayCluster that stopped waiting on pods before the
15 s resync armed for them fired, then waits 300 s). A wait told to `refit` replaces a timer
started for a wait more than `EARLY` shorter than its own: cancelling one is no action, and
starting the next is due either way, so the history is one workflow task and its calls
shorter. A timer started for as long a wait is kept however late the pass comes, as KubeRay's
requeue keeps the earlier of two times: replacing it at every pass would cost a timer each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow

SHORTEST = timedelta(seconds=1)
EARLY = timedelta(seconds=60)
"""A running timer started for a wait this much shorter than a `refit` wait's is replaced.
Far more than the busy resyncs differ (seconds), where keeping the timer saves actions."""


class ResyncTimer:
    """The timer that ends a workflow's wait at the latest at the time it was armed for."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._due: datetime | None = None
        self._length = timedelta(0)
        """How long a wait the running timer was started for."""
        self._fired = False

    async def wait(
        self, due: datetime, summary: str, done: Callable[[], bool], *, refit: bool = False
    ) -> None:
        """Wait until `done()`, or the timer fires: by `due` at the latest.

        Args:
            due: When a pass is due at the latest.
            summary: The timer's summary in the history, if one is started.
            done: Whether the wait is over before then (a signal made a pass due).
            refit: Replace a running timer started for a wait more than `EARLY` shorter than
                this one; runs recorded before that keep it (their patch decides).
        """
        self._arm(due, summary, refit)
        await workflow.wait_condition(lambda: done() or self._fired)
        self._fired = False  # a resync: the caller's pass is due anyway

    def disarm(self) -> None:
        """Stop the running timer: nothing is due until a signal."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task, self._due, self._length, self._fired = None, None, timedelta(0), False

    def _arm(self, due: datetime, summary: str, refit: bool) -> None:
        """Make sure the timer fires by `due`: keep the running one if it does, else replace it."""
        running = self._task is not None and not self._task.done()
        soon_enough = self._due is not None and self._due <= due
        delay = max(due - workflow.now(), SHORTEST)
        too_short = refit and delay - self._length > EARLY
        if running and soon_enough and not too_short:
            return
        if self._task is not None:
            self._task.cancel()
        self._due, self._length, self._fired = due, delay, False
        self._task = asyncio.create_task(self._sleep(delay, summary))

    async def _sleep(self, delay: timedelta, summary: str) -> None:
        await workflow.sleep(delay, summary=summary)
        self._fired = True
