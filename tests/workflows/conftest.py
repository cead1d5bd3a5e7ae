"""What the time-skipping workflow tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from kuberay_temporal.binaries import temporal_test_server
from tests.workflows.raycluster.test_workflow import register_state_attribute


@pytest_asyncio.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server per test: skipping time must not wake other tests' workflows."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=pydantic_data_converter,
    )
    await register_state_attribute(env)
    yield env
    await env.shutdown()
