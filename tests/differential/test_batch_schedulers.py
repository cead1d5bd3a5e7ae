"""KubeRay's batch-scheduler samples side by side, both operators configured for the scheduler.

Opt-in with the full set (`KUBERAY_TEMPORAL_DIFFERENTIAL=all`): one stack per scheduler, each
minutes to start. Our worker's `KUBERAY_TEMPORAL_BATCH_SCHEDULER` is set, and the dev stack
starts KubeRay's operator with the same `--batch-scheduler`. No scheduler runs here: the pods
of both sides are compared as the two operators made them (the simulated runtime still runs
them, as it ignores `schedulerName`). KAI's Queue object is not served here and is left out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.differential.conftest import differential_stack
from tests.differential.scenario import documents, side_by_side
from tests.e2e.conftest import LocalStack

pytestmark = [
    pytest.mark.slow,
    pytest.mark.full_set,
    pytest.mark.timeout(900),
    pytest.mark.kubernetes,
]
SAMPLES = {
    "kai-scheduler": ["ray-cluster.kai-scheduler.yaml"],
    "yunikorn": ["ray-cluster.yunikorn-scheduler.yaml", "ray-job.yunikorn-scheduler.yaml"],
}
READY = {"RayCluster": ("state", "ready"), "RayJob": ("jobDeploymentStatus", "Complete")}


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
        docs = [d for d in documents(file) if d.get("kind") in READY]
        (main,) = docs
        kind, name = main["kind"], main["metadata"]["name"]
        async with side_by_side(stack) as both:
            await both.apply(main)
            field, value = READY[kind]
            await both.reach(kind.lower(), name, lambda s, f=field, v=value: s.get(f) == v, value)
            left += [f"{file}: {line}" for line in await both.unexplained(kind, name)]
            await both.delete(kind.lower(), name)
    assert not left, "\n".join(left)
