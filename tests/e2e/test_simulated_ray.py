"""Whole RayJob and RayService lifecycles with no real Ray: the simulated runtime's Ray simulator.

`kuberay-temporal dev --runtime simulated` (worker, bridge, Temporal dev server, devcluster):
head pods answer as a simulated Ray dashboard (checked against real Ray by
`tests/devcluster/test_ray_simulator_contract.py`), and the entrypoint says what a job does
(`sleep N` runs N seconds, `exit N` fails). RayJobs in HTTPMode, K8sJobMode and SidecarMode
complete and are cleaned up as their spec says; a failing one is retried `backoffLimit` times
and ends Failed with AppFailed; a RayService becomes Ready
with a serve endpoint. Nothing here runs a Ray process, which is what lets the reliability
and scale suites run hundreds of such lifecycles on one machine.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import LocalStack
from tests.e2e.test_metrics import apply, get, reaches
from tests.eventually import eventually
from tests.reference import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def sample(name: str, file: str, **spec: Any) -> dict[str, Any]:
    """One of our RayJob samples under `name`, head only, with `spec` fields replaced."""
    doc = yaml.safe_load((REPO_ROOT / "samples" / file).read_text())
    doc["metadata"]["name"] = name
    doc["spec"]["rayClusterSpec"].pop("workerGroupSpecs", None)
    doc["spec"].update(spec)
    return dict(doc)


async def names(stack: LocalStack, kind: str, selector: str) -> list[str]:
    raw = await stack.kubectl("get", kind, "-l", selector, "-o", "json")
    return sorted(
        i["metadata"]["name"]
        for i in json.loads(raw)["items"]
        if not i["metadata"].get("deletionTimestamp")
    )


async def test_rayjobs_and_a_rayservice_run_on_simulated_ray(simulated_stack: LocalStack) -> None:
    stack = simulated_stack
    began = time.monotonic()
    quick = {"entrypoint": "echo simulated; sleep 2", "ttlSecondsAfterFinished": 0}
    await apply(stack, sample("http", "rayjob.http-mode.yaml", **quick))
    await apply(stack, sample("k8s", "rayjob.k8s-job-mode.yaml", **quick))
    await apply(stack, sample("sidecar", "rayjob.sidecar-mode.yaml", **quick))
    failing = {"entrypoint": "sleep 1; exit 1", "backoffLimit": 1, "submissionMode": "HTTPMode"}
    await apply(stack, sample("failing", "rayjob.http-mode.yaml", **failing))
    docs = list(yaml.safe_load_all((REPO_ROOT / "samples" / "rayservice.yaml").read_text()))
    path = stack.state_dir.parent / "rayservice.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    await stack.kubectl("apply", "-f", str(path))

    for name in ("http", "k8s", "sidecar"):
        job = await reaches(stack, name, "Complete", within=180)
        status = job["status"]
        assert status["jobStatus"] == "SUCCEEDED", status
        assert (status.get("succeeded"), status.get("failed", 0)) == (1, 0), status
        assert status["startTime"] <= status["endTime"]

    job = await reaches(stack, "failing", "Failed", within=180)
    status = job["status"]
    assert (status["jobStatus"], status["reason"]) == ("FAILED", "AppFailed"), status
    # backoffLimit 1: two attempts, each on its own cluster, both failed.
    assert (status.get("failed"), status.get("succeeded", 0)) == (2, 0), status
    assert "exit code 1" in status["message"]

    async def service_ready() -> dict[str, Any] | None:
        service = await get(stack, "rayservice", "rayservice-hello")
        status = service.get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        ready = conditions.get("Ready") == "True" and status.get("numServeEndpoints")
        return status if ready else None

    status = await eventually(service_ready, within=180, message="RayService Ready")
    apps = status["activeServiceStatus"]["applicationStatuses"]
    assert apps["hello"]["status"] == "RUNNING", apps

    # ttlSecondsAfterFinished 0 with shutdownAfterJobFinishes: the samples' clusters go.
    async def cleaned_up() -> bool:
        left = await names(stack, "rayclusters", "ray.io/originated-from-crd=RayJob")
        return not left

    await eventually(cleaned_up, within=120, message="the finished RayJobs' clusters deleted")
    elapsed = time.monotonic() - began
    print(f"\n4 RayJobs (5 attempts) and 1 RayService on simulated Ray in {elapsed:.0f}s")
