"""Every KubeRay RayCluster, RayJob and RayService sample side by side: the full set.

Opt-in, as it takes the better part of an hour: `KUBERAY_TEMPORAL_DIFFERENTIAL=all pytest
tests/differential/test_samples.py -rA` (without the variable `conftest.py` deselects its
tests, and pytest's summary counts them). The representative subset in `test_raycluster.py` and
`test_rayjob.py` runs in CI.

Each sample is applied unchanged (every document, in both namespaces) on the simulated runtime
and followed until each side reaches the end its kind can reach here — a cluster ready, a job
Complete or Failed, a service Running — or `SETTLE_SECONDS` pass: samples that ask for GPUs or
TPUs, or for CRDs this control plane lacks, stay pending on both sides, and what each operator
made by then is compared as well. A sample's test fails with every difference `known.py` does
not accept, and with the side that did not finish where only one did (`/ended`), unless the
sample is among `UNCOMPARED_SAMPLES`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.differential.known import BY_SAMPLE, Known, unexplained
from tests.differential.normalise import Difference
from tests.differential.scenario import SideBySide, documents, side_by_side
from tests.differential.sides import KUBERAY, OURS, SIDES
from tests.e2e.conftest import LocalStack
from tests.eventually import eventually
from tests.reference import KUBERAY_SAMPLES

SETTLE_SECONDS = 90.0
UNCOMPARED_SAMPLES = {
    "ray-service.incremental-upgrade.yaml": "an incremental upgrade needs the Gateway API "
    "(a Gateway and HTTPRoutes), which this control plane does not serve: neither side gets "
    "the RayService Running",
}
"""Samples whose every difference is accepted, and why: neither side can run them here as a
cluster with the feature would, so no difference of theirs says anything about ours."""
KINDS = ("RayCluster", "RayJob", "RayService")
PREFIXES = ("ray-cluster", "ray-job", "ray-service")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.full_set,
    pytest.mark.timeout(900),
    pytest.mark.kubernetes,
]


def samples() -> list[str]:
    """The sample files whose first ray.io object is one of `KINDS`."""
    return sorted(
        path.name
        for path in KUBERAY_SAMPLES.glob("*.yaml")
        if path.name.startswith(PREFIXES) and _ray_object(documents(path.name)) is not None
    )


def _ray_object(docs: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((d for d in docs if d.get("kind") in KINDS), None)


def ended(kind: str, status: dict[str, Any]) -> bool:
    """Whether a status is the end its kind can reach on the simulated runtime."""
    if kind == "RayCluster":
        return status.get("state") == "ready"
    if kind == "RayJob":
        return status.get("jobDeploymentStatus") in {"Complete", "Failed"}
    return status.get("serviceStatus") == "Running"


async def _settle(both: SideBySide, kind: str, name: str) -> list[str]:
    """Wait for the end on both sides at once; name each side that did not reach it."""

    async def side(namespace: str) -> str | None:
        async def reached() -> bool:
            return ended(kind, await both.status(namespace, kind.lower(), name))

        try:
            await eventually(reached, within=SETTLE_SECONDS, message=f"{namespace} ended")
        except AssertionError:
            return namespace
        return None

    return [ns for ns in await asyncio.gather(*(side(ns) for ns in SIDES)) if ns]


async def _apply_if_served(both: SideBySide, doc: dict[str, Any]) -> None:
    """Apply a sample's own object; one of a kind this control plane does not serve (KAI's
    Queue, Volcano's) is left out on both sides alike, and said so on the output."""
    try:
        await both.apply(doc)
    except AssertionError as err:
        if "resource mapping not found" not in str(err):
            raise
        print(f"not served here, left out on both sides: {doc['kind']} {doc['metadata']['name']}")


@pytest.mark.parametrize("file", samples())
async def test_sample_side_by_side(stack: LocalStack, file: str) -> None:
    await compare_sample(stack, file)


async def compare_sample(stack: LocalStack, file: str) -> None:
    """Apply the sample on both sides, follow it to its end, fail on what parts them."""
    docs = documents(file)
    main = _ray_object(docs)
    assert main is not None
    kind, name = main["kind"], main["metadata"]["name"]
    others = [d for d in docs if d.get("kind") not in KINDS]
    try:
        async with side_by_side(stack) as both:
            for doc in others:
                await _apply_if_served(both, doc)
            for doc in docs:
                if doc.get("kind") in KINDS:
                    await both.apply(doc)
            missed = await _settle(both, kind, name)
            found = await both.compare(kind, name)
            if len(missed) == 1:  # one operator finished, the other did not: a difference
                ended = {side: side not in missed for side in SIDES}
                found.append(Difference("/ended", ended[KUBERAY], ended[OURS]))
            why = UNCOMPARED_SAMPLES.get(file)
            anything = [Known("*", "uncompared", why)] if why else []
            left = [str(d) for d in unexplained(found, [*anything, *BY_SAMPLE.get(file, ())])]
            assert not left, f"{file} (not ended: {missed or 'none'}):\n" + "\n".join(left)
    finally:
        # The sample's own objects (a Redis Deployment, its password Secret) go after its
        # ray.io objects, as a user would remove them: a fault-tolerant cluster's Redis
        # cleanup needs both. Then the next sample starts from empty namespaces.
        for doc in others:
            for namespace in SIDES:
                await stack.kubectl(
                    "delete",
                    doc["kind"],
                    doc["metadata"]["name"],
                    "-n",
                    namespace,
                    "--ignore-not-found",
                    "--wait=false",
                    check=False,
                )
