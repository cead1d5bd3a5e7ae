"""Search attribute registration on a real dev server: idempotent, and checked."""

from __future__ import annotations

import uuid

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from worker.search_attributes import (
    ALL_KEYS,
    SearchAttributeError,
    ensure_search_attributes,
    type_name,
)
from workflows.messages import RAY_STATE

KEYWORD = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD


async def _new_namespace(client: Client) -> str:
    """Register a namespace that has none of our attributes yet."""
    namespace = f"sa-{uuid.uuid4().hex[:12]}"
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=namespace,
            workflow_execution_retention_period=Duration(seconds=86_400),
        )
    )
    return namespace


async def _custom_attributes(client: Client, namespace: str) -> dict[str, int]:
    response = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    return dict(response.custom_attributes)


async def test_ensure_registers_missing_keys_and_is_idempotent(
    local_env: WorkflowEnvironment,
) -> None:
    client = local_env.client
    namespace = await _new_namespace(client)
    assert not set(await _custom_attributes(client, namespace)) & {k.name for k in ALL_KEYS}

    await ensure_search_attributes(client, namespace)
    await ensure_search_attributes(client, namespace)

    attributes = await _custom_attributes(client, namespace)
    assert {key.name: attributes.get(key.name) for key in ALL_KEYS} == {
        "RayKind": KEYWORD,
        "RayNamespace": KEYWORD,
        "RayName": KEYWORD,
        "RayState": KEYWORD,
    }


async def test_ensure_on_default_namespace_keeps_dev_server_registration(
    local_env: WorkflowEnvironment,
) -> None:
    await ensure_search_attributes(local_env.client, "default")
    await ensure_search_attributes(local_env.client, "default")

    attributes = await _custom_attributes(local_env.client, "default")
    assert all(attributes.get(key.name) == KEYWORD for key in ALL_KEYS)


async def test_ensure_rejects_a_key_registered_with_another_type(
    local_env: WorkflowEnvironment,
) -> None:
    client = local_env.client
    namespace = await _new_namespace(client)
    await client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=namespace,
            search_attributes={RAY_STATE.name: IndexedValueType.INDEXED_VALUE_TYPE_TEXT},
        )
    )

    with pytest.raises(
        SearchAttributeError, match="RayState is registered as Text, expected Keyword"
    ):
        await ensure_search_attributes(client, namespace)


@pytest.mark.parametrize(
    ("indexed_value_type", "expected"),
    [
        pytest.param(IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, "Keyword", id="keyword"),
        pytest.param(IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST, "KeywordList", id="list"),
        pytest.param(IndexedValueType.INDEXED_VALUE_TYPE_DATETIME, "Datetime", id="datetime"),
        pytest.param(IndexedValueType.INDEXED_VALUE_TYPE_INT, "Int", id="int"),
    ],
)
def test_type_name_matches_cli_spelling(indexed_value_type: int, expected: str) -> None:
    assert type_name(indexed_value_type) == expected
