"""One stack for the differential suite: a real control plane, KubeRay's operator beside ours.

The simulated runtime runs pods (and Ray's dashboard, for both operators alike) without
processes; KubeRay's operator reaches those dashboards through the API server's proxy.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
import pytest_asyncio

from tests.differential.sides import KUBERAY, OURS, SIDES
from tests.e2e.conftest import LocalStack, running_stack
from tests.eventually import eventually
from tests.full_set import deselect_unless_asked

FULL_SET = "KUBERAY_TEMPORAL_DIFFERENTIAL"
"""`all` runs the tests marked `full_set` (every sample, `test_samples.py`); else deselected."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_unless_asked(config, items, Path(__file__).parent, FULL_SET)


@pytest_asyncio.fixture(scope="package")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    async with differential_stack(tmp_path_factory.mktemp("differential")) as running:
        yield running


@contextlib.asynccontextmanager
async def differential_stack(
    tmp_path: Path, env: Mapping[str, str] | None = None
) -> AsyncIterator[LocalStack]:
    """The stack with both operators, `env` setting ours (and KubeRay's alike where it can)."""
    async with running_stack(
        tmp_path,
        "simulated",
        env=env,
        control_plane="kubernetes",
        args=("--kuberay-namespace", KUBERAY),
    ) as running:
        await running.kubectl("create", "namespace", OURS)
        for namespace in SIDES:
            # Pods are refused until the namespace's default ServiceAccount exists; an
            # operator that raced it would record a Warning the other may not.
            await eventually(
                lambda ns=namespace: _has_default_account(running, ns),
                within=60,
                message=f"{namespace}'s default ServiceAccount",
            )
        yield running


async def _has_default_account(stack: LocalStack, namespace: str) -> bool:
    found = await stack.kubectl(
        "get", "serviceaccount", "default", "-n", namespace, "--ignore-not-found", "-o", "name"
    )
    return bool(found.strip())
