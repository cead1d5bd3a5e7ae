"""KubeRay's samples, unchanged, with real Ray on `make run`'s stack (devcluster, process runtime).

A new user applies a sample exactly as KubeRay's docs do and its RayCluster becomes `ready`
with real Ray, the pod count its spec asks for. CI runs the two that once failed here:
`ray-cluster.auth.yaml` (the operator creates its token Secret, as KubeRay's
reconcileAuthSecret; the head starts with it) and `ray-cluster.external-redis.yaml` (its Redis
runs in the image's `/data` with the sample's config, reached as `redis:6379`). The full size
runs every other RayCluster sample `sample_verdicts.RUN` gives this module, one at a time:

    KUBERAY_TEMPORAL_REAL_SAMPLES=all .venv/bin/pytest tests/e2e/test_kuberay_samples_real.py

On the real control plane instead: `KUBERAY_TEMPORAL_SAMPLES_CONTROL_PLANE=kubernetes`.

Each sample is deleted before the next (also when it fails), as the machine has two cores.
What a sample's comments tell the user to run first (`BEFORE`) runs first.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml

from crds.feature_gates import Gate
from crds.raycluster import RayCluster
from crds.replicas import desired_worker_pods
from tests.e2e.conftest import LocalStack, gates_on, running_stack
from tests.e2e.sample_verdicts import RAYCLUSTERS, RUN
from tests.eventually import eventually
from tests.reference import KUBERAY_SAMPLES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


CONTROL_PLANE = os.environ.get("KUBERAY_TEMPORAL_SAMPLES_CONTROL_PLANE", "devcluster")
"""`make run`'s devcluster, as a new user meets the samples; `kubernetes` for the real one."""


@pytest_asyncio.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    # Two samples use alpha features: their gates on, as each sample's comment asks.
    gates = gates_on(Gate.RAY_CLUSTER_NETWORK_POLICY, Gate.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE)
    async with running_stack(
        tmp_path_factory.mktemp("kuberay-real"), "process", gates, control_plane=CONTROL_PLANE
    ) as running:
        yield running


async def get(stack: LocalStack, *args: str) -> dict[str, Any]:
    return dict(json.loads(await stack.kubectl("get", *args, "-o", "json")))


async def ready(stack: LocalStack, name: str) -> bool:
    status = (await get(stack, "raycluster", name)).get("status") or {}
    return status.get("state") == "ready"


BEFORE: dict[str, tuple[tuple[str, ...], tuple[str, str]]] = {
    # What the sample's comments tell the user to run first, and what that made.
    "ray-cluster.auth-manual.yaml": (
        ("create", "secret", "generic", "ray-cluster-with-auth", "--from-literal=auth_token=x"),
        ("secret", "ray-cluster-with-auth"),
    ),
}


async def run_sample(stack: LocalStack, file: str) -> str:
    """Apply a sample unchanged, wait until its RayCluster is ready, return its name."""
    path = KUBERAY_SAMPLES / file
    (cluster,) = [d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "RayCluster"]
    name = str(cluster["metadata"]["name"])
    if file in BEFORE:
        command, _ = BEFORE[file]
        await stack.kubectl(*command)
    await stack.kubectl("apply", "-f", str(path))
    try:
        await eventually(lambda: ready(stack, name), within=300, message=f"{name} ready")
    except AssertionError:
        pods = await stack.kubectl("get", "pods", "-o", "wide", check=False)
        events = await stack.kubectl("get", "events", check=False)
        await delete_sample(stack, file)  # the next sample starts in an empty namespace
        raise AssertionError(f"{name} not ready\n{pods}\n{events}") from None
    return name


async def delete_sample(stack: LocalStack, file: str) -> None:
    """Delete everything the sample made; wait until its RayClusters and pods are gone.

    Samples reuse names (several Redis ones call their cluster `raycluster-external-redis`):
    a RayCluster still held by its Redis cleanup finalizer would take the next sample's apply.
    """
    await stack.kubectl("delete", "-f", str(KUBERAY_SAMPLES / file), "--wait=false")
    if file in BEFORE:
        _, (kind, name) = BEFORE[file]
        await stack.kubectl("delete", kind, name)

    async def gone() -> bool:
        pods = (await get(stack, "pods"))["items"]
        ray_pods = [p for p in pods if "ray.io/cluster" in (p["metadata"].get("labels") or {})]
        return not ray_pods and not (await get(stack, "rayclusters"))["items"]

    # Deleting the whole file also deletes a Redis sample's Redis and password Secret, so its
    # cleanup Job cannot finish and the finalizer goes at KubeRay's 300 s timeout.
    await eventually(gone, within=420, message=f"the RayClusters and pods of {file} gone")


# The full size adds every other RayCluster sample `sample_verdicts` runs here.
CI = ("ray-cluster.auth.yaml", "ray-cluster.external-redis.yaml")  # the tests below
MORE = [file for file, module in RUN.items() if module == RAYCLUSTERS and file not in CI]

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
