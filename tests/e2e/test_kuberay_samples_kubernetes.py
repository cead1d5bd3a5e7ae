"""KubeRay's Kubernetes token-auth samples, unchanged, with real Ray on the real control plane.

With `authOptions.enableK8sTokenAuth` Ray accepts a ServiceAccount token and checks it with a
TokenReview against the API server, so these samples need a real one: devcluster accepts any
bearer token and has no TokenReview. The operator creates no token Secret for them (KubeRay's
reconcileAuthSecret skips Kubernetes token auth); the pods mount a projected ServiceAccount
token, which the node mints through TokenRequest, and Ray's own processes authenticate with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.e2e.conftest import LocalStack, running_stack
from tests.e2e.test_kuberay_samples_real import delete_sample, get, run_sample

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.kubernetes]


@pytest_asyncio.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    async with running_stack(
        tmp_path_factory.mktemp("kuberay-k8s-auth"), "process", control_plane="kubernetes"
    ) as running:
        yield running


@pytest.mark.parametrize(
    "file", ["ray-cluster.kubernetes.auth.yaml", "ray-cluster.kubernetes.auth-manual.yaml"]
)
async def test_kubernetes_token_auth_sample_becomes_ready(stack: LocalStack, file: str) -> None:
    name = await run_sample(stack, file)
    pods = (await get(stack, "pods", "-l", f"ray.io/cluster={name}"))["items"]
    assert len(pods) == 2
    for pod in pods:
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env") or []}
        assert env["RAY_AUTH_MODE"] == "token" and env["RAY_ENABLE_K8S_TOKEN_AUTH"] == "true"
        assert "RAY_AUTH_TOKEN" not in env
    secrets = (await get(stack, "secrets"))["items"]
    assert name not in {s["metadata"]["name"] for s in secrets}  # no operator-made token
    await delete_sample(stack, file)
