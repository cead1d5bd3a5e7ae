"""`make run`'s loop: kubectl apply a CR, a workflow appears and creates objects; delete ends it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import LocalStack, running_stack
from tests.eventually import eventually
from tests.reference import REPO_ROOT

pytestmark = pytest.mark.timeout(300)

SAMPLE = REPO_ROOT / "samples" / "raycluster.yaml"
QUERY = "RayKind='RayCluster' AND RayNamespace='default' AND RayName='raycluster-mini'"


async def test_kubectl_apply_starts_a_searchable_workflow_that_creates_the_cluster(
    tmp_path: Path,
) -> None:
    async with running_stack(tmp_path, "process") as stack:  # `make run`'s control plane
        await _apply_creates_the_cluster(stack)


async def _apply_creates_the_cluster(local_stack: LocalStack) -> None:
    await local_stack.kubectl("apply", "-f", str(SAMPLE))

    async def listed() -> list[str]:
        return [wf.id async for wf in local_stack.client.list_workflows(QUERY)]

    (workflow_id,) = await eventually(listed, within=60, message="the workflow by search")
    assert workflow_id.startswith("raycluster/default/raycluster-mini/")

    async def objects() -> bool:
        pods = json.loads(
            await local_stack.kubectl(
                "get", "pods", "-l", "ray.io/cluster=raycluster-mini", "-o", "json"
            )
        )["items"]
        types = sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods)
        services = await local_stack.kubectl("get", "services", "-o", "name")
        return types == ["head", "worker"] and "raycluster-mini-head-svc" in services

    await eventually(objects, within=60, message="head pod, worker pod and head Service")

    async def status() -> dict[str, object]:
        cluster = json.loads(
            await local_stack.kubectl("get", "raycluster", "raycluster-mini", "-o", "json")
        )
        return dict(cluster.get("status") or {})

    written = await eventually(status, within=60, message="a status")
    assert written["desiredWorkerReplicas"] == 1 and written["observedGeneration"] == 1

    await local_stack.kubectl("delete", "raycluster", "raycluster-mini", "--wait=false")
    handle = local_stack.client.get_workflow_handle(workflow_id)
    assert "is gone" in await handle.result()
