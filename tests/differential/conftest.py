"""One stack for the differential suite: a real control plane, KubeRay's operator beside ours.

The simulated runtime runs pods (and Ray's dashboard, for both operators alike) without
processes; KubeRay's operator reaches those dashboards through the API server's proxy.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.differential.sides import KUBERAY, OURS
from tests.e2e.conftest import LocalStack, running_stack


@pytest_asyncio.fixture(scope="package")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    async with running_stack(
        tmp_path_factory.mktemp("differential"),
        "simulated",
        control_plane="kubernetes",
        args=("--kuberay-namespace", KUBERAY),
    ) as running:
        await running.kubectl("create", "namespace", OURS)
        yield running
