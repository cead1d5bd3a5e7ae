"""RayServices side by side: KubeRay's sample deployed, its Serve config updated in place, then
upgraded blue-green to a new cluster, as KubeRay's e2e RayService tests do."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.differential.scenario import SideBySide, documents, side_by_side
from tests.differential.sides import SIDES
from tests.e2e.conftest import LocalStack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.kubernetes]


def serving(status: dict[str, Any]) -> bool:
    """Running, every app RUNNING, no pending cluster."""
    active = status.get("activeServiceStatus") or {}
    apps = active.get("applicationStatuses") or {}
    return (
        status.get("serviceStatus") == "Running"
        and bool(apps)
        and all(app.get("status") == "RUNNING" for app in apps.values())
        and not (status.get("pendingServiceStatus") or {}).get("rayClusterName")
    )


async def _service(both: SideBySide, namespace: str, name: str) -> dict[str, Any]:
    raw = await both.stack.kubectl("get", "rayservice", name, "-n", namespace, "-o", "json")
    return dict(json.loads(raw))


async def _active_clusters(both: SideBySide, name: str) -> dict[str, str]:
    return {
        ns: (await both.status(ns, "rayservice", name))["activeServiceStatus"]["rayClusterName"]
        for ns in SIDES
    }


async def _caught_up(both: SideBySide, name: str) -> bool:
    """Whether both sides have seen the latest spec and serve it."""
    for namespace in SIDES:
        service = await _service(both, namespace, name)
        seen = service.get("status", {}).get("observedGeneration")
        if seen != service["metadata"]["generation"] or not serving(service.get("status", {})):
            return False
    return True


async def test_sample_service_deploys_updates_and_upgrades_the_same(stack: LocalStack) -> None:
    (doc,) = documents("ray-service.sample.yaml")
    name = doc["metadata"]["name"]
    doc["spec"]["rayClusterDeletionDelaySeconds"] = 5  # the old cluster goes soon after a switch
    async with side_by_side(stack) as both:
        await both.apply(doc)
        await both.reach("rayservice", name, serving, "Running", within=240)
        first = await _active_clusters(both, name)

        # A Serve config change is applied to the running cluster: no new one.
        config = doc["spec"]["serveConfigV2"].replace("price: 3", "price: 4")
        assert config != doc["spec"]["serveConfigV2"]
        await both.patch("rayservice", name, {"spec": {"serveConfigV2": config}})
        await both.settle(lambda: _caught_up(both, name), "the Serve config update applied")
        assert await _active_clusters(both, name) == first

        # A cluster change makes a new cluster, switches to it, then deletes the old one.
        label = {"metadata": {"labels": {"upgrade": "blue-green"}}}
        upgrade = {"spec": {"rayClusterConfig": {"headGroupSpec": {"template": label}}}}
        await both.patch("rayservice", name, upgrade)

        async def switched() -> bool:
            if not await _caught_up(both, name):
                return False
            clusters = await _active_clusters(both, name)
            return all(clusters[ns] != first[ns] for ns in SIDES)

        await both.settle(switched, "both sides switched to a new cluster")

        async def old_gone() -> bool:
            """The old clusters and what they owned (pods go after their cluster)."""
            for namespace in SIDES:
                left = await stack.kubectl(
                    "get", "rayclusters,pods,services", "-n", namespace, "-o", "name"
                )
                if first[namespace] in left:  # pods and Services are named after it
                    return False
            return True

        await both.settle(old_gone, "the old clusters deleted after the delay")
        found = await both.unexplained("RayService", name)
        assert not found, "\n".join(found)
        await both.delete("rayservice", name)
