"""GCS fault tolerance on the local stack with real Ray: Redis and embedded RocksDB.

With GCS FT a head pod can die without losing the cluster: workers wait for the new head, the
new GCS reloads its tables, and a detached actor created before the failure still answers
with its state afterwards (KubeRay's e2e `TestRayClusterGCSFaultTolerance`). With Redis, the
cluster's keys live under its UID, the cleanup finalizer removes them when the cluster is
deleted, and the password (a Secret reference) never shows up in a workflow history, the
stack's log or an Event.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from crds.feature_gates import Gate
from tests.e2e.conftest import LocalStack, gates_on, running_stack
from tests.e2e.ray_tools import (
    REDIS_ADDRESS,
    REDIS_SECRET,
    apply,
    redis_keys,
    redis_manifests,
    run_job,
)
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CREATE_ACTOR = """
import ray
ray.init(namespace="ft")
@ray.remote(num_cpus=1)
class Counter:
    def __init__(self):
        self.count = 0
    def incr(self):
        self.count += 1
        return self.count
counter = Counter.options(name="counter", lifetime="detached").remote()
print("count", ray.get(counter.incr.remote()))
"""
USE_ACTOR = """
import ray
ray.init(namespace="ft")
print("count", ray.get(ray.get_actor("counter").incr.remote()))
"""


def ray_cluster(name: str, ft: dict[str, Any]) -> dict[str, Any]:
    """A head that runs no tasks (so the actor lands on the worker) and one 1-CPU worker."""

    def container(role: str) -> dict[str, Any]:
        return {
            "name": f"ray-{role}",
            "image": "rayproject/ray:2.60.0",
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
        }

    head_ports = [{"containerPort": 6379, "name": "gcs-server"}]
    head_ports.append({"containerPort": 8265, "name": "dashboard"})
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.60.0",
            "gcsFaultToleranceOptions": ft,
            "headGroupSpec": {
                "rayStartParams": {"num-cpus": "0"},
                "template": {"spec": {"containers": [{**container("head"), "ports": head_ports}]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "replicas": 1,
                    "minReplicas": 0,
                    "maxReplicas": 1,
                    "rayStartParams": {"num-cpus": "1"},
                    "template": {"spec": {"containers": [container("worker")]}},
                }
            ],
        },
    }


async def get(stack: LocalStack, *args: str) -> dict[str, Any]:
    return dict(json.loads(await stack.kubectl("get", *args, "-o", "json")))


async def live_pods(stack: LocalStack, selector: str) -> list[dict[str, Any]]:
    found = (await get(stack, "pods", "-l", selector))["items"]
    return [p for p in found if not p["metadata"].get("deletionTimestamp")]


async def ready(stack: LocalStack, name: str) -> bool:
    status = (await get(stack, "raycluster", name)).get("status") or {}
    return status.get("state") == "ready" and status.get("readyWorkerReplicas") == 1


async def survive_head_deletion(stack: LocalStack, name: str) -> None:
    """The actor made before the head pod is deleted keeps its state on the new head."""
    assert "count 1" in await run_job(stack, name, "create-actor", CREATE_ACTOR, within=180)
    head_selector = f"ray.io/cluster={name},ray.io/node-type=head"
    old_head = (await live_pods(stack, head_selector))[0]["metadata"]["name"]
    worker = (await live_pods(stack, f"ray.io/cluster={name},ray.io/node-type=worker"))[0]
    await stack.kubectl("delete", "pod", old_head, "--wait=false")

    async def new_head() -> str | None:
        heads = [p["metadata"]["name"] for p in await live_pods(stack, head_selector)]
        return heads[0] if heads and heads[0] != old_head else None

    await eventually(new_head, within=120, message="a new head pod")
    # The cluster's status may still say ready from before; the new head pod's own readiness
    # is what says Ray is back. Under load its first start can fail and be restarted.
    await eventually(
        lambda: _running(live_pods(stack, head_selector)), within=300, message="new head Ready"
    )
    await eventually(lambda: ready(stack, name), within=180, message="ready on the new head")
    assert "count 2" in await run_job(stack, name, "use-actor", USE_ACTOR, within=240)
    # The worker that hosts the actor was never replaced: it waited for the new GCS.
    after = await live_pods(stack, f"ray.io/cluster={name},ray.io/node-type=worker")
    assert [p["metadata"]["uid"] for p in after] == [worker["metadata"]["uid"]]


async def test_redis_gcs_ft(local_stack: LocalStack) -> None:
    stack, name = local_stack, "ft-redis"
    password = secrets.token_hex(16)
    await apply(stack, *redis_manifests(password))
    await eventually(
        lambda: _running(live_pods(stack, "app=redis")), within=60, message="Redis running"
    )
    secret_ref = {"valueFrom": {"secretKeyRef": {"name": REDIS_SECRET, "key": "password"}}}
    ft = {"redisAddress": REDIS_ADDRESS, "redisPassword": secret_ref}
    await apply(stack, ray_cluster(name, ft))
    await eventually(lambda: ready(stack, name), within=180, message="ready with Redis FT")

    cluster = await get(stack, "raycluster", name)
    uid = cluster["metadata"]["uid"]
    assert "ray.io/gcs-ft-redis-cleanup-finalizer" in cluster["metadata"]["finalizers"]
    head = (await live_pods(stack, f"ray.io/cluster={name},ray.io/node-type=head"))[0]
    assert head["metadata"]["annotations"]["ray.io/external-storage-namespace"] == uid
    env = {e["name"]: e for e in head["spec"]["containers"][0]["env"]}
    assert env["RAY_external_storage_namespace"]["value"] == uid
    assert env["REDIS_PASSWORD"]["valueFrom"] == secret_ref["valueFrom"]

    await survive_head_deletion(stack, name)
    assert any(uid in key for key in await redis_keys(stack, "before"))

    await stack.kubectl("delete", "raycluster", name, "--wait=false")
    await eventually(
        lambda: _gone(stack, "raycluster", name), within=240, message="the finalizer removed"
    )
    # The cleanup Job went with the cluster (it is owned by it); what it did is in Redis, and
    # the finalizer came off because the Job ended, not because the timeout forced it.
    assert not [key for key in await redis_keys(stack, "after") if uid in key]
    events = (await get(stack, "events"))["items"]
    reasons = {e["reason"] for e in events if e["involvedObject"]["name"] == name}
    assert "CreatedRedisCleanupJob" in reasons and "ForceDeletedStuckCluster" not in reasons

    await assert_nowhere(stack, password)


@pytest_asyncio.fixture
async def rocksdb_stack(tmp_path: Path) -> AsyncIterator[LocalStack]:
    """The real-Ray stack with the alpha GCSFaultToleranceEmbeddedStorage gate on."""
    gates = gates_on(Gate.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE)
    async with running_stack(tmp_path, "process", gates, control_plane="kubernetes") as stack:
        yield stack


async def test_rocksdb_gcs_ft(rocksdb_stack: LocalStack) -> None:
    stack, name = rocksdb_stack, "ft-rocksdb"
    await apply(stack, ray_cluster(name, {"backend": "rocksdb"}))
    await eventually(lambda: ready(stack, name), within=180, message="ready with RocksDB FT")
    pvc = await get(stack, "pvc", f"{name}-gcs-pvc")
    assert pvc["metadata"]["ownerReferences"][0]["name"] == name
    await survive_head_deletion(stack, name)


async def assert_nowhere(stack: LocalStack, password: str) -> None:
    """The password is in no workflow history of the run, the stack's log or any Event."""
    histories = 0
    async for execution in stack.client.list_workflows():
        handle = stack.client.get_workflow_handle(execution.id, run_id=execution.run_id)
        history = await handle.fetch_history()
        assert password not in history.to_json(), f"password in {execution.id}"
        histories += 1
    assert histories >= 1
    assert password.encode() not in stack.log.read_bytes()
    events = await stack.kubectl("get", "events", "-A", "-o", "json")
    assert password not in events


async def _running(found: Any) -> bool:
    pods = await found
    return bool(pods) and all(
        any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in (p.get("status") or {}).get("conditions") or []
        )
        for p in pods
    )


async def _gone(stack: LocalStack, *what: str) -> bool:
    out = await stack.kubectl("get", *what, "--ignore-not-found", "-o", "name")
    return not out.strip()
