"""The time-skipping test server as the workflow tests, recorders and benchmarks start it."""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from kuberay_temporal.binaries import temporal_test_server

SERVER_STARTUP = timedelta(seconds=60)
"""How long a Temporal server the tests start may take to listen (the SDK waits 5 s, which a
busy two-core machine, building or running a control plane beside the tests, can exceed)."""


async def start_time_skipping() -> WorkflowEnvironment:
    """Start the Java test server with our data converter and the `RayState` attribute.

    The test server cannot list search attributes, only add them, so the one the workflows
    upsert is added here; the others are not upserted where this server is used.
    """
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=pydantic_data_converter,
        test_server_startup_timeout=SERVER_STARTUP,
    )
    await env.client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace="default",
            search_attributes={"RayState": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD},
        )
    )
    return env
