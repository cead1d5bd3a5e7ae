"""The one way the worker (and the dev stack) connects to Temporal.

Every payload in this project is a pydantic model, so every client must use the pydantic
data converter; connecting in one place keeps the converter from being forgotten.
"""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from worker.settings import WorkerSettings


async def connect(settings: WorkerSettings) -> Client:
    """Connect to the Temporal frontend named by `settings`.

    Args:
        settings: Address and namespace to use.

    Returns:
        A connected client with the pydantic data converter.

    Raises:
        RuntimeError: The server cannot be reached (raised by the SDK).
    """
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.temporal_namespace,
        data_converter=pydantic_data_converter,
    )
