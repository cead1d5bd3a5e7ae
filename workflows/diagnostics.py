"""A tiny workflow that proves a worker, a server and a durable timer work together.

`Ping` is always registered, so `temporal workflow start --type Ping` (or a test) can
check a deployment end to end without touching Kubernetes, and the time-skipping tests
use it to check that a long durable timer takes no real time.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from temporalio import workflow


class PingInput(BaseModel):
    """What `Ping` waits for."""

    duration: timedelta = Field(default=timedelta(), ge=timedelta())
    """How long to sleep on a durable timer; zero skips the timer."""


class PingResult(BaseModel):
    """When `Ping` started and finished, by workflow time."""

    started_at: datetime
    finished_at: datetime


@workflow.defn(name="Ping")
class PingWorkflow:
    """Sleep for the requested duration on a durable timer and report workflow time."""

    @workflow.run
    async def run(self, ping: PingInput) -> PingResult:
        """Sleep on a durable timer and return the workflow time before and after.

        Args:
            ping: How long to sleep.

        Returns:
            `workflow.now()` before and after the timer.
        """
        started_at = workflow.now()
        if ping.duration > timedelta():
            await workflow.sleep(ping.duration, summary=f"ping for {ping.duration}")
        return PingResult(started_at=started_at, finished_at=workflow.now())
