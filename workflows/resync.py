"""One resync timer kept across a workflow's waits, instead of one timer per wait.

A wait with a timeout starts a timer and cancels it when a signal ends the wait first: a billed
action and two history events for every pass. `ResyncTimer` keeps one timer running while it
wakes the workflow no later than the next wait needs, and replaces it only when a wait needs
an earlier wake-up, or after it fired. A timer that fires earlier than the wait in progress
asked for (it was started for a shorter one) brings a resync pass forward; it is never late.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow

SHORTEST = timedelta(seconds=1)


class ResyncTimer:
    """The timer that ends a workflow's wait at the latest at the time it was armed for."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._due: datetime | None = None
        self._fired = False

    async def wait(self, due: datetime, summary: str, done: Callable[[], bool]) -> None:
        """Wait until `done()`, or the timer fires: by `due` at the latest."""
        self._arm(due, summary)
        await workflow.wait_condition(lambda: done() or self._fired)
        self._fired = False  # a resync: the caller's pass is due anyway

    def disarm(self) -> None:
        """Stop the running timer: nothing is due until a signal."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task, self._due, self._fired = None, None, False

    def _arm(self, due: datetime, summary: str) -> None:
        """Make sure the timer fires by `due`: keep the running one if it does, else replace it."""
        running = self._task is not None and not self._task.done()
        if running and self._due is not None and self._due <= due:
            return
        if self._task is not None:
            self._task.cancel()
        self._due, self._fired = due, False
        delay = max(due - workflow.now(), SHORTEST)
        self._task = asyncio.create_task(self._sleep(delay, summary))

    async def _sleep(self, delay: timedelta, summary: str) -> None:
        await workflow.sleep(delay, summary=summary)
        self._fired = True
