"""KubeRay's samples, unchanged, with real Ray on `make run`'s stack (devcluster, process runtime).

A new user applies a sample exactly as KubeRay's docs do and its RayCluster becomes `ready`
with real Ray, the pod count its spec asks for. CI runs the two that once failed here:
`ray-cluster.auth.yaml` (the operator creates its token Secret, as KubeRay's
reconcileAuthSecret; the head starts with it) and `ray-cluster.external-redis.yaml` (its Redis
runs in the image's `/data` with the sample's config, reached as `redis:6379`). The whole set,
those two and the sixteen of KubeRay's `sampleyaml` CI, one at a time:

    KUBERAY_TEMPORAL_REAL_SAMPLES=all .venv/bin/pytest tests/e2e/test_kuberay_samples_real.py

Each sample is deleted before the next, as the machine has two cores. Two of the sixteen do
not become ready here, and are left out: `tls` (its certificates come from cert-manager,
which devcluster stores but does not run) and `fluentbit` (no local program stands in for the
`fluent/fluent-bit` image, so its sidecar cannot start and says so).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml

from crds.raycluster import RayCluster
from crds.replicas import desired_worker_pods
from tests.e2e.conftest import LocalStack, running_stack
from tests.e2e.test_kuberay_samples import SAMPLEYAML
from tests.eventually import eventually
from tests.reference import KUBERAY_SAMPLES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest_asyncio.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    async with running_stack(tmp_path_factory.mktemp("kuberay-real"), "process") as running:
        yield running


async def get(stack: LocalStack, *args: str) -> dict[str, Any]:
    return dict(json.loads(await stack.kubectl("get", *args, "-o", "json")))


async def ready(stack: LocalStack, name: str) -> bool:
    status = (await get(stack, "raycluster", name)).get("status") or {}
    return status.get("state") == "ready"


async def run_sample(stack: LocalStack, file: str) -> str:
    """Apply a sample unchanged, wait until its RayCluster is ready, return its name."""
    path = KUBERAY_SAMPLES / file
    (cluster,) = [d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "RayCluster"]
    name = str(cluster["metadata"]["name"])
    await stack.kubectl("apply", "-f", str(path))
    try:
        await eventually(lambda: ready(stack, name), within=300, message=f"{name} ready")
    except AssertionError:
        pods = await stack.kubectl("get", "pods", "-o", "wide", check=False)
        events = await stack.kubectl("get", "events", check=False)
        raise AssertionError(f"{name} not ready\n{pods}\n{events}") from None
    return name


async def delete_sample(stack: LocalStack, file: str) -> None:
    """Delete everything the sample made and wait until its pods are gone (Redis cleanup too)."""
    await stack.kubectl("delete", "-f", str(KUBERAY_SAMPLES / file), "--wait=false")

    async def gone() -> bool:
        pods = (await get(stack, "pods"))["items"]
        return not [p for p in pods if "ray.io/cluster" in (p["metadata"].get("labels") or {})]

    await eventually(gone, within=240, message=f"the pods of {file} gone")


# The full size adds KubeRay's sampleyaml set.
NOT_HERE = {"external-redis", "tls", "fluentbit"}  # its own test below; see the docstring
MORE = [f"ray-cluster.{name}.yaml" for name in SAMPLEYAML if name not in NOT_HERE]

if os.environ.get("KUBERAY_TEMPORAL_REAL_SAMPLES") == "all":

    @pytest.mark.parametrize("file", MORE)
    async def test_sample_becomes_ready_with_real_ray(stack: LocalStack, file: str) -> None:
        name = await run_sample(stack, file)
        cluster = await get(stack, "raycluster", name)
        pods = (await get(stack, "pods", "-l", f"ray.io/cluster={name}"))["items"]
        wanted = desired_worker_pods(RayCluster.model_validate(cluster).spec) + 1
        assert len(pods) == wanted, [p["metadata"]["name"] for p in pods]
        await delete_sample(stack, file)


async def test_token_auth_sample_gets_its_secret_and_becomes_ready(stack: LocalStack) -> None:
    name = await run_sample(stack, "ray-cluster.auth.yaml")
    secret = await get(stack, "secret", name)
    assert secret["metadata"]["ownerReferences"][0]["name"] == name
    assert secret["data"]["auth_token"]
    await delete_sample(stack, "ray-cluster.auth.yaml")


async def test_external_redis_sample_becomes_ready_on_its_redis(stack: LocalStack) -> None:
    name = await run_sample(stack, "ray-cluster.external-redis.yaml")
    redis = (await get(stack, "pods", "-l", "app=redis"))["items"][0]
    assert redis["status"]["containerStatuses"][0]["restartCount"] == 0
    cluster = await get(stack, "raycluster", name)
    conditions = {c["type"]: c["status"] for c in cluster["status"].get("conditions") or []}
    assert conditions.get("HeadPodReady") == "True"
    await delete_sample(stack, "ray-cluster.external-redis.yaml")
