"""The search attributes the Temporal UI filters CR workflows by, and their registration.

There are four, all Keyword: RayKind, RayNamespace, RayName and RayState. A workflow that sets
an unregistered attribute fails every workflow task and retries forever, so the worker
registers them before it polls. The server accepts a re-registration with a *different* type
and silently keeps the old one, so after adding we list them again and check name and type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.common import SearchAttributeKey

from workflows.messages import RAY_KIND, RAY_NAME, RAY_NAMESPACE, RAY_STATE

ALL_KEYS: tuple[SearchAttributeKey[Any], ...] = (RAY_KIND, RAY_NAMESPACE, RAY_NAME, RAY_STATE)
"""Every attribute our workflows set; the worker and the dev server register these."""


class SearchAttributeError(RuntimeError):
    """A search attribute is missing or has the wrong type after registration."""


async def ensure_search_attributes(
    client: Client,
    namespace: str,
    keys: Sequence[SearchAttributeKey[Any]] = ALL_KEYS,
) -> None:
    """Register the missing `keys` in `namespace`, then check that all of them exist.

    Idempotent: attributes that already exist with the right type are left alone.

    Args:
        client: A connected client; its operator service does the registration.
        namespace: Temporal namespace to register in.
        keys: Attributes to ensure; all of ours by default.

    Raises:
        SearchAttributeError: An attribute exists with another type, or is still missing
            after registration.
    """
    existing = await _list(client, namespace)
    missing = {
        key.name: IndexedValueType.ValueType(key.indexed_value_type)
        for key in keys
        if key.name not in existing
    }
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
        )
        existing = await _list(client, namespace)
    problems = [_problem(key, existing) for key in keys]
    wrong = [problem for problem in problems if problem]
    if wrong:
        raise SearchAttributeError(f"namespace {namespace!r}: " + "; ".join(wrong))


async def _list(client: Client, namespace: str) -> Mapping[str, int]:
    response = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    return dict(response.custom_attributes)


def _problem(key: SearchAttributeKey[Any], existing: Mapping[str, int]) -> str:
    """Describe what is wrong with `key` in `existing`, or return "" if nothing is."""
    if key.name not in existing:
        return f"search attribute {key.name} is not registered"
    actual = existing[key.name]
    if actual != key.indexed_value_type:
        return (
            f"search attribute {key.name} is registered as {type_name(actual)}, "
            f"expected {type_name(key.indexed_value_type)}"
        )
    return ""


def type_name(indexed_value_type: int) -> str:
    """Return the CLI's name of an index type, e.g. "Keyword" or "KeywordList".

    These are the names `temporal server start-dev --search-attribute NAME=TYPE` takes.
    """
    name = IndexedValueType.Name(IndexedValueType.ValueType(indexed_value_type))
    return name.removeprefix("INDEXED_VALUE_TYPE_").replace("_", " ").title().replace(" ", "")
