"""What the time-skipping workflow tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from tests.time_skipping import start_time_skipping


@pytest_asyncio.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server per test: skipping time must not wake other tests' workflows."""
    env = await start_time_skipping()
    yield env
    await env.shutdown()
