"""KubeRay's samples of alpha features side by side, their feature gates on for both operators.

Opt-in with the full set (`KUBERAY_TEMPORAL_DIFFERENTIAL=all`). With v1.7.0's default gates
both operators refuse these samples alike (`test_samples.py`); here the dev stack runs ours
with the gates on (`KUBERAY_TEMPORAL_FEATURE_GATES`) and KubeRay's operator with the same
`--feature-gates`, as each sample's comment asks, and what each operator builds is compared:
the NetworkPolicies of `ray-cluster.network-policy-deny-all.yaml`, the PersistentVolumeClaim
and the head's storage of `ray-cluster.embedded-gcs-ft.yaml`. (`ray-cluster.mtls.yaml` needs
cert-manager, which does not run here; `ray-cluster.historyserver.yaml` is refused by ours
whatever the gate, README "KubeRay samples we do not accept".)
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from crds.feature_gates import Gate
from tests.differential.conftest import differential_stack
from tests.differential.test_samples import compare_sample
from tests.e2e.conftest import LocalStack, gates_on

pytestmark = [
    pytest.mark.slow,
    pytest.mark.full_set,
    pytest.mark.timeout(900),
    pytest.mark.kubernetes,
]
SAMPLES = ("ray-cluster.network-policy-deny-all.yaml", "ray-cluster.embedded-gcs-ft.yaml")


@pytest_asyncio.fixture(scope="module")
async def gated(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    env = gates_on(Gate.RAY_CLUSTER_NETWORK_POLICY, Gate.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE)
    async with differential_stack(tmp_path_factory.mktemp("gated"), env) as stack:
        yield stack


@pytest.mark.parametrize("file", SAMPLES)
async def test_a_gated_sample_is_built_alike(gated: LocalStack, file: str) -> None:
    await compare_sample(gated, file)
