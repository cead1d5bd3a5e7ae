"""RayClusters side by side: KubeRay's samples and the scenarios of KubeRay's e2e tests."""

from __future__ import annotations

from typing import Any

import pytest

from tests.differential.scenario import SideBySide, documents, side_by_side
from tests.differential.sides import SIDES
from tests.e2e.conftest import LocalStack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.kubernetes]


def sample(name: str) -> dict[str, Any]:
    (doc,) = documents(name)
    return doc


def ready(status: dict[str, Any]) -> bool:
    return status.get("state") == "ready"


async def test_sample_cluster_becomes_ready_the_same(stack: LocalStack) -> None:
    doc = sample("ray-cluster.sample.yaml")
    name = doc["metadata"]["name"]
    async with side_by_side(stack) as both:
        await both.apply(doc)
        await both.reach("raycluster", name, ready, "ready")
        found = await both.unexplained("RayCluster", name)
        assert not found, "\n".join(found)
        await both.delete("raycluster", name)


def workers(name: str) -> str:
    return f"ray.io/cluster={name},ray.io/node-type=worker"


def replicas(count: int) -> list[dict[str, Any]]:
    return [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": count}]


def ready_with(count: int) -> Any:
    def done(status: dict[str, Any]) -> bool:
        return ready(status) and status.get("availableWorkerReplicas") == count

    return done


async def test_scaling_up_down_and_workers_to_delete(stack: LocalStack) -> None:
    """KubeRay's e2e `raycluster_test`: replicas up, then down naming the worker to delete."""
    doc = sample("ray-cluster.sample.yaml")
    name = doc["metadata"]["name"]
    async with side_by_side(stack) as both:
        await both.apply(doc)
        await both.reach("raycluster", name, ready, "ready")

        await both.patch("raycluster", name, replicas(3))
        await both.reach("raycluster", name, ready_with(3), "three workers")
        found = await both.unexplained("RayCluster", name)
        assert not found, "\n".join(found)

        # The same worker on both sides: replica index 0 (names are random, indices are not).
        first = f"{workers(name)},ray.io/worker-group-replica-index=0"
        victims = {ns: (await both.pods(ns, first))[0] for ns in SIDES}
        await both.patch(
            "raycluster",
            name,
            lambda ns: [
                *replicas(2),
                {
                    "op": "add",
                    "path": "/spec/workerGroupSpecs/0/scaleStrategy",
                    "value": {"workersToDelete": [victims[ns]]},
                },
            ],
        )
        await both.reach("raycluster", name, ready_with(2), "two workers")
        for ns in SIDES:
            left = await both.pods(ns, workers(name))
            assert victims[ns] not in left and len(left) == 2, (ns, left)
        found = await both.unexplained("RayCluster", name)
        assert not found, "\n".join(found)
        await both.delete("raycluster", name)


async def test_suspend_and_resume(stack: LocalStack) -> None:
    """KubeRay's e2e `raycluster_suspend_test`: all pods go, the state says so, they return."""
    doc = sample("ray-cluster.sample.yaml")
    name = doc["metadata"]["name"]
    async with side_by_side(stack) as both:
        await both.apply(doc)
        await both.reach("raycluster", name, ready, "ready")

        await both.patch("raycluster", name, {"spec": {"suspend": True}})
        await both.reach("raycluster", name, lambda s: s.get("state") == "suspended", "suspended")
        for ns in SIDES:
            await both.settle(
                lambda ns=ns: _no_pods(both, ns, name), f"{ns}: no pods while suspended"
            )
        found = await both.unexplained("RayCluster", name)
        assert not found, "\n".join(found)

        await both.patch("raycluster", name, {"spec": {"suspend": False}})
        await both.reach("raycluster", name, ready, "ready again")
        found = await both.unexplained("RayCluster", name)
        assert not found, "\n".join(found)
        await both.delete("raycluster", name)


async def _no_pods(both: SideBySide, namespace: str, name: str) -> bool:
    return not await both.pods(namespace, f"ray.io/cluster={name}")


async def test_a_recreate_upgrade_replaces_every_pod_the_same(stack: LocalStack) -> None:
    """`upgradeStrategy: Recreate` (KubeRay v1.6): a template change replaces every pod, the
    head first, then the workers, on both sides."""
    doc = sample("ray-cluster.sample.yaml")
    name = doc["metadata"]["name"]
    change = {
        "spec": {
            "upgradeStrategy": {"type": "Recreate"},
            "headGroupSpec": {"template": {"metadata": {"labels": {"upgraded": "yes"}}}},
        }
    }
    async with side_by_side(stack) as both:
        await both.apply(doc)
        await both.reach("raycluster", name, ready, "ready")
        before = {ns: await both.pods(ns, f"ray.io/cluster={name}") for ns in SIDES}

        await both.patch("raycluster", name, change)

        async def recreated() -> bool:
            # Every pod replaced and the status says so, on each side.
            for side in SIDES:
                pods = await both.pods(side, f"ray.io/cluster={name}")
                heads = await both.pods(side, f"ray.io/cluster={name},upgraded=yes")
                status = await both.status(side, "raycluster", name)
                head_ready = ("HeadPodReady", "True") in {
                    (c["type"], c["status"]) for c in status.get("conditions") or []
                }
                replaced = len(heads) == 1 and not set(before[side]) & set(pods)
                if not (replaced and head_ready and status.get("readyWorkerReplicas") == 1):
                    return False
            return True

        await both.settle(recreated, "both sides recreate the pods with the new template")
        found = await both.unexplained("RayCluster", name)
        assert not found, "\n".join(found)
        await both.delete("raycluster", name)


async def test_the_head_ingress_is_made_the_same(stack: LocalStack) -> None:
    """`enableIngress` with a class: the same Ingress (name, labels, the CR's annotations, the
    class, the path `/` by Prefix to the head Service's dashboard port, the owner) and Event."""
    doc = sample("ray-cluster.sample.yaml")
    name = doc["metadata"]["name"]
    doc["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "nginx", "team": "a"}
    doc["spec"]["headGroupSpec"]["enableIngress"] = True
    async with side_by_side(stack) as both:
        await both.apply(doc)
        await both.reach("raycluster", name, ready, "ready")
        captured = {
            ns: await both.stack.kubectl("get", "ingress", "-n", ns, "-o", "name") for ns in SIDES
        }
        assert all(
            f"ingress.networking.k8s.io/{name}-head-ingress" in out for out in captured.values()
        )
        found = await both.unexplained("RayCluster", name)
        assert not found, "\n".join(found)
        await both.delete("raycluster", name)
