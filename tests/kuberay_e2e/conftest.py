"""One stack for KubeRay's own e2e tests: the real control plane, real Ray, our operator.

The tests are KubeRay's (`ray-operator/test/e2e*` of the source `building` builds from), built
with `go test -c` on first use (`python -m devcluster.control_plane.building
--kuberay-e2e`). They reach the API server through KUBECONFIG and create their own
namespaces (`test-ns-*`), which our bridge reconciles: no KubeRay operator runs here.

The stack is set up as KubeRay's e2e CI sets up its cluster, as far as ours goes: the feature
gates of its test overlay (`CI_GATES`) and the Gateway API's CRDs (its incremental-upgrade
tests install Istio, which brings them).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from crds.feature_gates import DEFAULTS, Gate
from devcluster.control_plane.building import Build, default_build
from kuberay_temporal.stand_in_crds import gateway_api_crds
from tests.e2e.conftest import LocalStack, gates_on, running_stack
from tests.full_set import deselect_unless_asked

FULL_SET = "KUBERAY_TEMPORAL_KUBERAY_E2E"
"""`all` runs every test of every package (marker `full_set`); else only CI's subset."""

CI_GATES = (
    Gate.RAY_CRON_JOB,
    Gate.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE,
    Gate.RAY_CLUSTER_MTLS,
)
"""The gates KubeRay v1.7.0's e2e overlay (`config/overlays/test-overrides`) turns on that are
off by default. It also turns on SidecarSubmitterRestart, which ours does not carry out and
refuses to start with (`crds.feature_gates.UNSUPPORTED`); the one subtest that needs it says so
in `outcomes.py`."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_unless_asked(config, items, Path(__file__).parent, FULL_SET)


@pytest_asyncio.fixture(scope="package")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    assert not any(DEFAULTS[gate] for gate in CI_GATES)
    state = tmp_path_factory.mktemp("kuberay-e2e")
    async with running_stack(
        state, "process", env=gates_on(*CI_GATES), control_plane="kubernetes"
    ) as running:
        crds = state / "gateway-api.json"
        crds.write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "items": gateway_api_crds()})
        )
        await running.kubectl("apply", "-f", str(crds))
        yield running


@pytest.fixture(scope="package")
def binaries() -> Build:
    """Where KubeRay's test binaries are cached; each test builds its own on first use."""
    return default_build()
