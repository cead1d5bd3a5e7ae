"""KubeRay's RayCluster behaviours on the local stack with real Ray, driven with kubectl.

One cluster goes through what a KubeRay user does to it: it becomes `ready` with its head and
worker as real Ray nodes, scales up, loses exactly the pod named in `workersToDelete`, is
suspended and resumed by signal, is recreated after a spec change under
`upgradeStrategy: Recreate`, and gets a new head after its head pod is deleted, which its
worker joins again.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import pytest

from tests.e2e.conftest import LocalStack
from tests.eventually import eventually
from tests.reference import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SAMPLE = REPO_ROOT / "samples" / "raycluster.yaml"
NAME = "raycluster-mini"


async def cluster(stack: LocalStack) -> dict[str, Any]:
    return dict(json.loads(await stack.kubectl("get", "raycluster", NAME, "-o", "json")))


async def pods(stack: LocalStack, node_type: str = "") -> list[dict[str, Any]]:
    selector = f"ray.io/cluster={NAME}" + (f",ray.io/node-type={node_type}" if node_type else "")
    found = json.loads(await stack.kubectl("get", "pods", "-l", selector, "-o", "json"))["items"]
    return [p for p in found if not p["metadata"].get("deletionTimestamp")]


async def ready(stack: LocalStack, workers: int) -> bool:
    status = (await cluster(stack)).get("status") or {}
    return status.get("state") == "ready" and status.get("readyWorkerReplicas") == workers


async def ray_nodes(stack: LocalStack) -> list[tuple[str, bool]]:
    """Alive Ray nodes as the head's dashboard lists them, through the API server's proxy."""
    path = f"/api/v1/namespaces/default/services/{NAME}-head-svc:dashboard/proxy/api/v0/nodes"
    raw = json.loads(await stack.kubectl("get", "--raw", path, check=False) or "{}")
    nodes = (((raw.get("data") or {}).get("result") or {}).get("result")) or []
    return sorted((n["node_ip"], n["is_head_node"]) for n in nodes if n["state"] == "ALIVE")


async def patch(stack: LocalStack, *ops: dict[str, Any]) -> None:
    await stack.kubectl("patch", "raycluster", NAME, "--type", "json", "-p", json.dumps(list(ops)))


async def signal(stack: LocalStack, name: str) -> None:
    env = {**os.environ, "TEMPORAL_ADDRESS": stack.client.service_client.config.target_host}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        "signal",
        name,
        f"RayCluster/default/{NAME}",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
    )
    assert await process.wait() == 0


async def test_raycluster_lifecycle_with_real_ray(local_stack: LocalStack) -> None:
    stack = local_stack
    await stack.kubectl("apply", "-f", str(SAMPLE))
    await eventually(lambda: ready(stack, 1), within=180, message="ready with 1 worker")
    nodes = await eventually(lambda: _two(ray_nodes(stack)), within=60, message="two Ray nodes")
    head_ip = (await pods(stack, "head"))[0]["status"]["podIP"]
    assert (head_ip, True) in nodes

    await patch(stack, {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2})
    await eventually(lambda: ready(stack, 2), within=180, message="2 ready workers")

    victim = (await pods(stack, "worker"))[0]["metadata"]["name"]
    await patch(
        stack,
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 1},
        {
            "op": "add",
            "path": "/spec/workerGroupSpecs/0/scaleStrategy",
            "value": {"workersToDelete": [victim]},
        },
    )
    survivors = await eventually(
        lambda: _names_when(pods(stack, "worker"), 1), within=60, message="one worker left"
    )
    assert victim not in survivors

    await signal(stack, "suspend")
    await eventually(lambda: _state(stack, "suspended"), within=120, message="suspended")
    assert (await cluster(stack))["spec"]["suspend"] is True and await pods(stack) == []
    await signal(stack, "resume")
    await eventually(lambda: ready(stack, 1), within=180, message="ready again after resume")

    before = {p["metadata"]["name"] for p in await pods(stack)}
    await patch(
        stack,
        {"op": "add", "path": "/spec/upgradeStrategy", "value": {"type": "Recreate"}},
    )
    await eventually(lambda: ready(stack, 1), within=60)
    await patch(stack, {"op": "replace", "path": "/spec/rayVersion", "value": "2.60.1"})
    await eventually(
        lambda: _all_new(pods(stack), before, 2), within=180, message="every pod recreated"
    )
    await eventually(lambda: ready(stack, 1), within=180, message="ready after Recreate")

    old_head = (await pods(stack, "head"))[0]["metadata"]["name"]
    await stack.kubectl("delete", "pod", old_head, "--wait=false")
    new_head = await eventually(
        lambda: _other_head(pods(stack, "head"), old_head), within=120, message="a new head"
    )
    await eventually(lambda: ready(stack, 1), within=180, message="ready with the new head")
    assert new_head != old_head
    # Without GCS fault tolerance the new head starts an empty Ray: the worker's raylet loses
    # its GCS, exits, and its container restarts and joins the new head (KubeRay C23).
    rejoined = await eventually(
        lambda: _head_and_worker(stack), within=300, message="the worker alive in the new Ray"
    )
    assert rejoined[0][0] == (await pods(stack, "head"))[0]["status"]["podIP"]


async def _head_and_worker(stack: LocalStack) -> list[tuple[str, bool]] | None:
    """The alive Ray nodes, when they are exactly the current head pod and worker pod."""
    ips = {
        p["status"].get("podIP"): p["metadata"]["labels"]["ray.io/node-type"]
        for p in await pods(stack)
    }
    nodes = await ray_nodes(stack)
    wanted = sorted((ip, kind == "head") for ip, kind in ips.items() if ip)
    return sorted(nodes, key=lambda n: not n[1]) if nodes == wanted and len(nodes) == 2 else None


async def _two(nodes: Any) -> list[tuple[str, bool]] | None:
    found = await nodes
    return found if len(found) == 2 else None


async def _names_when(found: Any, count: int) -> set[str] | None:
    names = {p["metadata"]["name"] for p in await found}
    return names if len(names) == count else None


async def _state(stack: LocalStack, state: str) -> bool:
    return ((await cluster(stack)).get("status") or {}).get("state") == state


async def _all_new(found: Any, before: set[str], count: int) -> bool:
    names = {p["metadata"]["name"] for p in await found}
    return len(names) == count and not names & before


async def _other_head(found: Any, old: str) -> str | None:
    heads = [p["metadata"]["name"] for p in await found]
    return heads[0] if heads and heads[0] != old else None
