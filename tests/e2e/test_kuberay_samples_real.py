"""KubeRay's token-auth and external-Redis samples, unchanged, with real Ray on `make run`'s stack.

A new user applies `ray-cluster.auth.yaml` and `ray-cluster.external-redis.yaml` exactly as
KubeRay's docs do, on devcluster with the process runtime, and each RayCluster becomes
`ready` with real Ray: the auth sample's token Secret is created by the operator (KubeRay's
reconcileAuthSecret) and the head starts with it; the external-Redis sample's Redis runs in
its image's `/data` with the sample's config and the head uses it for GCS fault tolerance.
One sample at a time, deleted before the next, as the machine has two cores.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml

from tests.e2e.conftest import LocalStack, running_stack
from tests.eventually import eventually
from tests.reference import KUBERAY_SAMPLES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


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
    await stack.kubectl("delete", "-f", str(KUBERAY_SAMPLES / file), "--wait=true")


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
