"""The in-tree autoscaler on the local stack: Ray's own `kuberay-autoscaler` in the head pod.

The sidecar reads the RayCluster through the in-cluster API (devcluster serves pods over HTTPS
on the node's bridge address), sees a task that needs more CPUs than any node has, and patches
the worker group's replicas up; the workflow creates the worker; once the worker has been idle
for `idleTimeoutSeconds` the autoscaler names it in `workersToDelete` and scales back down.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import LocalStack
from tests.e2e.ray_tools import apply, run_job
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

NAME = "autoscaled"
NEEDS_TWO_CPUS = """
import ray
ray.init()
@ray.remote(num_cpus=2)
def where():
    return ray.get_runtime_context().get_node_id()
print("ran on", ray.get(where.remote()))
"""


def cluster() -> dict[str, Any]:
    """A 1-CPU head with the autoscaler and a worker group of 2-CPU workers starting at zero."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": NAME},
        "spec": {
            "rayVersion": "2.60.0",
            "enableInTreeAutoscaling": True,
            "autoscalerOptions": {"idleTimeoutSeconds": 10},
            "headGroupSpec": {
                "rayStartParams": {"num-cpus": "1"},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-head",
                                "image": "rayproject/ray:2.60.0",
                                "ports": [{"containerPort": 8265, "name": "dashboard"}],
                            }
                        ]
                    }
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "big",
                    "replicas": 0,
                    "minReplicas": 0,
                    "maxReplicas": 2,
                    "rayStartParams": {"num-cpus": "2"},
                    "template": {
                        "spec": {
                            "containers": [{"name": "ray-worker", "image": "rayproject/ray:2.60.0"}]
                        }
                    },
                }
            ],
        },
    }


async def state(stack: LocalStack) -> tuple[int, list[str]]:
    """The group's replicas in the spec and the names of its live worker pods."""
    obj = json.loads(await stack.kubectl("get", "raycluster", NAME, "-o", "json"))
    replicas = int(obj["spec"]["workerGroupSpecs"][0].get("replicas") or 0)
    selector = f"ray.io/cluster={NAME},ray.io/node-type=worker"
    pods = json.loads(await stack.kubectl("get", "pods", "-l", selector, "-o", "json"))["items"]
    live = [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]
    return replicas, live


async def test_autoscaler_scales_up_and_down(local_stack: LocalStack) -> None:
    stack = local_stack
    await apply(stack, cluster())

    async def head_ready() -> bool:
        status = json.loads(await stack.kubectl("get", "raycluster", NAME, "-o", "json"))
        return (status.get("status") or {}).get("state") == "ready"

    await eventually(head_ready, within=180, message="the head ready")
    assert await state(stack) == (0, [])

    output = await run_job(stack, NAME, "needs-two-cpus", NEEDS_TWO_CPUS, within=240)
    assert "ran on" in output
    replicas, workers = await state(stack)
    assert replicas == 1 and len(workers) == 1, (replicas, workers)

    async def scaled_down() -> bool:
        return await state(stack) == (0, [])

    await eventually(scaled_down, within=120, message="scaled back to zero after idling")
