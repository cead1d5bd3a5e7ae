"""One stack for KubeRay's own e2e tests: the real control plane, real Ray, our operator.

The tests are KubeRay's (`ray-operator/test/e2e*` of the source `building` builds from), built
with `go test -c` on first use (`python -m devcluster.control_plane.building
--kuberay-e2e`). They reach the API server through KUBECONFIG and create their own
namespaces (`test-ns-*`), which our bridge reconciles: no KubeRay operator runs here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from devcluster.control_plane.building import Build, default_build
from tests.e2e.conftest import LocalStack, running_stack
from tests.full_set import deselect_unless_asked

FULL_SET = "KUBERAY_TEMPORAL_KUBERAY_E2E"
"""`all` runs every test of every package (marker `full_set`); else only CI's subset."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_unless_asked(config, items, Path(__file__).parent, FULL_SET)


@pytest_asyncio.fixture(scope="package")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    async with running_stack(
        tmp_path_factory.mktemp("kuberay-e2e"), "process", control_plane="kubernetes"
    ) as running:
        yield running


@pytest.fixture(scope="package")
def binaries() -> Build:
    """Where KubeRay's test binaries are cached; each test builds its own on first use."""
    return default_build()
