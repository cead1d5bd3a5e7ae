"""The process kubelet's live tests: a devcluster whose pods run as processes, and pod helpers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from devcluster.server import DevCluster
from tests.devcluster.conftest import Kubectl
from tests.eventually import eventually

RAY_ENV = [{"name": "RAY_memory_monitor_refresh_ms", "value": "0"}]


@pytest_asyncio.fixture
async def node(tmp_path: Path) -> AsyncIterator[tuple[DevCluster, Kubectl]]:
    cluster = DevCluster(tmp_path / "state", runtime="process", pod_network=True)
    await cluster.start()
    try:
        yield cluster, Kubectl(cluster.kubeconfig_path, tmp_path / "cache")
    finally:
        await cluster.stop()


def pod_manifest(name: str, command: str, **container: object) -> str:
    """A pod of one container running `command` in bash, in a Ray image."""
    spec = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 5,
            "containers": [
                {
                    "name": "main",
                    "image": "rayproject/ray:2.41.0",
                    "command": ["/bin/bash", "-c", "--", command],
                    "env": RAY_ENV,
                    **container,
                }
            ],
        },
    }
    return json.dumps(spec)


async def pod_json(kubectl: Kubectl, name: str) -> dict[str, object]:
    """The pod as JSON, or {} when it is not there."""
    result = await kubectl.run("get", "pod", name, "-o", "json")
    return json.loads(result.out) if result.code == 0 else {}


async def run_to_end(kubectl: Kubectl, name: str, command: str, within: float) -> tuple[str, str]:
    """Run `command` in a pod that is never restarted; return its end phase and its logs."""
    spec = json.loads(pod_manifest(name, command))
    spec["spec"]["restartPolicy"] = "Never"
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(spec))

    async def ended() -> str | None:
        status = (await pod_json(kubectl, name)).get("status") or {}
        phase = status.get("phase") if isinstance(status, dict) else None
        return str(phase) if phase in ("Succeeded", "Failed") else None

    phase = await eventually(ended, within=within, message=f"the {name} pod ended")
    return phase, await kubectl.ok("logs", name)
