"""KubeRay's batch-scheduler samples side by side, both operators configured for the scheduler.

Opt-in with the full set (`KUBERAY_TEMPORAL_DIFFERENTIAL=all`): one stack per scheduler, each
minutes to start. Our worker's `KUBERAY_TEMPORAL_BATCH_SCHEDULER` is set, and the dev stack
starts KubeRay's operator with the same `--batch-scheduler`. No scheduler runs here: the pods
of both sides stay Pending, unscheduled, and are compared as the two operators made them, once
each side has made all of them, with the PodGroups of Volcano and scheduler-plugins (the stack
serves their kind with a stand-in CRD). KAI's and Volcano's Queue objects are cluster-wide,
not served here and left out.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.differential.conftest import differential_stack
from tests.differential.scenario import documents, side_by_side
from tests.differential.sides import SIDES
from tests.e2e.conftest import LocalStack

pytestmark = [
    pytest.mark.slow,
    pytest.mark.full_set,
    pytest.mark.timeout(900),
    pytest.mark.kubernetes,
]
SAMPLES = {
    "kai-scheduler": ["ray-cluster.kai-scheduler.yaml", "ray-cluster.kai-gpu-sharing.yaml"],
    "yunikorn": ["ray-cluster.yunikorn-scheduler.yaml", "ray-job.yunikorn-scheduler.yaml"],
    "volcano": [
        "ray-cluster.volcano-scheduler.yaml",
        "ray-cluster.volcano-scheduler-queue.yaml",
        "ray-job.volcano-scheduler-queue.yaml",
    ],
    "scheduler-plugins": ["ray-cluster.scheduler-plugins.yaml"],
}
POD_GROUPS = {
    "volcano": ("podgroups.scheduling.volcano.sh",),
    "scheduler-plugins": ("podgroups.scheduling.x-k8s.io",),
}
KINDS = ("RayCluster", "RayJob")


@pytest_asyncio.fixture(scope="module", params=sorted(SAMPLES))
async def scheduled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[str, LocalStack]]:
    env = {"KUBERAY_TEMPORAL_BATCH_SCHEDULER": request.param}
    async with differential_stack(tmp_path_factory.mktemp(request.param), env) as stack:
        yield request.param, stack


async def test_the_samples_are_stamped_alike(scheduled: tuple[str, LocalStack]) -> None:
    scheduler, stack = scheduled
    left: list[str] = []
    for file in SAMPLES[scheduler]:
        (main,) = [d for d in documents(file) if d.get("kind") in KINDS]
        kind, name = main["kind"], main["metadata"]["name"]
        expected = _pods(main)
        async with side_by_side(stack, POD_GROUPS.get(scheduler, ())) as both:
            await both.apply(main)
            for namespace in SIDES:

                async def made(ns: str = namespace, count: int = expected) -> bool:
                    pods = await both.pods(ns, "ray.io/is-ray-node=yes")
                    return len(pods) == count and await _heads_reported(stack, ns)

                what = f"{namespace}: {expected} Ray pods of {file}, the head in the status"
                await both.settle(made, what)
            left += [f"{file}: {line}" for line in await both.unexplained(kind, name)]
            await both.delete(kind.lower(), name)
    assert not left, "\n".join(left)


def _pods(doc: dict[str, Any]) -> int:
    """The Ray pods the sample's cluster has: the head and every worker replica's hosts."""
    spec = doc["spec"].get("rayClusterSpec") or doc["spec"]
    groups = spec.get("workerGroupSpecs") or []
    return 1 + sum(g.get("replicas", 1) * g.get("numOfHosts", 1) for g in groups)


async def _heads_reported(stack: LocalStack, namespace: str) -> bool:
    """Whether every RayCluster's status names its head pod (no pod changes once made: ours
    writes it at its next resync), and every RayJob's copy of its cluster's status does too
    (both operators copy a cluster's status into its RayJob's while it is not ready, each on
    its own pass after the cluster's status changed)."""
    raw = await stack.kubectl("get", "rayclusters,rayjobs", "-n", namespace, "-o", "json")
    items = json.loads(raw)["items"]
    clusters = [i for i in items if i["kind"] == "RayCluster"]
    copies = [
        (i.get("status") or {}).get("rayClusterStatus") or {}
        for i in items
        if i["kind"] == "RayJob"
    ]
    return bool(clusters) and all(
        (status.get("head") or {}).get("podName")
        for status in [*(c.get("status") or {} for c in clusters), *copies]
    )
