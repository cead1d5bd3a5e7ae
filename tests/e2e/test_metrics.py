"""The worker's Prometheus endpoint on the local stack: KubeRay's metric names with KubeRay's
values for a finished RayJob, next to the Temporal SDK's own metrics.

The stack runs with `KUBERAY_TEMPORAL_METRICS_PORT` and JSON logs; the test applies a RayJob
with kubectl, waits for the state KubeRay would reach and scrapes `/metrics` over HTTP. On the
simulated runtime a RayJob whose entrypoint sleeps for ten minutes (see devcluster's Ray
simulator) fails on its `activeDeadlineSeconds` (a terminal transition KubeRay also times);
the completed RayJob, an HTTPMode one, runs on real Ray with direct dashboard calls.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import yaml

from devcluster.ports import free_port
from tests.e2e.conftest import LocalStack, running_stack
from tests.eventually import eventually
from tests.reference import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
WRITE = "write_rayjob_status"


def parse(text: str) -> Series:
    """Every sample of a Prometheus text exposition, keyed by name and label set."""
    found: Series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        name, labels, value = match.groups()
        found[(name, frozenset(_LABEL.findall(labels or "")))] = float(value)
    return found


def of(series: Series, metric: str, /, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of `metric` whose labels include `labels`."""
    wanted = set(labels.items())
    return {key: value for (n, key), value in series.items() if n == metric and wanted <= key}


async def scrape(port: int) -> Series:
    async with httpx.AsyncClient() as http:
        response = await http.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    response.raise_for_status()
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(response.text)


def rayjob(name: str, **spec: Any) -> dict[str, Any]:
    """Our K8sJobMode sample under `name`, head only, with `spec` fields replaced."""
    doc = yaml.safe_load((REPO_ROOT / "samples" / "rayjob.k8s-job-mode.yaml").read_text())
    doc["metadata"]["name"] = name
    doc["spec"].pop("workerGroupSpecs", None)
    doc["spec"]["rayClusterSpec"].pop("workerGroupSpecs", None)
    doc["spec"].update(spec)
    return dict(doc)


async def apply(stack: LocalStack, doc: dict[str, Any]) -> None:
    path = stack.state_dir.parent / f"{doc['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    await stack.kubectl("apply", "-f", str(path))


async def get(stack: LocalStack, kind: str, name: str) -> dict[str, Any]:
    return dict(json.loads(await stack.kubectl("get", kind, name, "-o", "json")))


async def reaches(stack: LocalStack, name: str, state: str, within: float) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        job = await get(stack, "rayjob", name)
        return job if (job.get("status") or {}).get("jobDeploymentStatus") == state else None

    return await eventually(probe, within=within, message=f"RayJob {name} {state}")


def check_rayjob_series(
    series: Series, job: dict[str, Any], state: str, elapsed: float
) -> dict[str, Any]:
    """KubeRay's RayJob and RayCluster series for a finished `job`; returns its cluster."""
    meta = job["metadata"]
    ident = {"name": meta["name"], "namespace": "default", "uid": meta["uid"]}
    assert of(series, "kuberay_job_info", **ident) == {frozenset(ident.items()): 1}
    assert of(series, "kuberay_job_deployment_status", **ident) == {
        frozenset({**ident, "deployment_status": state}.items()): 1
    }
    durations = of(series, "kuberay_job_execution_duration_seconds", **ident)
    assert list(durations) == [
        frozenset({**ident, "job_deployment_status": state, "retry_count": "0"}.items())
    ]
    # KubeRay's value: from status.startTime to the write that ended the attempt, which is
    # also when status.endTime is set (both have second precision).
    seconds = next(iter(durations.values()))
    start, end = (datetime.fromisoformat(job["status"][k]) for k in ("startTime", "endTime"))
    assert abs(seconds - (end - start).total_seconds()) <= 1.5
    assert 0 < seconds <= elapsed + 1
    cluster_name = job["status"]["rayClusterName"]
    (key,) = of(series, "kuberay_cluster_info", name=cluster_name)
    assert dict(key)["owner_kind"] == "RayJob"
    return {"name": cluster_name, "uid": dict(key)["uid"]}


def check_sdk_series(series: Series) -> None:
    """The Temporal SDK's own metrics come from the same endpoint, for the same work."""
    # The status write runs as a local activity, which the SDK measures under its own name.
    latency = "temporal_local_activity_execution_latency_count"
    writes = of(series, latency, activity_type=WRITE)
    assert writes and all(count >= 1 for count in writes.values()), writes
    tasks = of(series, "temporal_workflow_task_execution_latency_count", workflow_type="RayJob")
    assert tasks and all(count >= 1 for count in tasks.values()), tasks


@pytest_asyncio.fixture
async def metrics_stack(tmp_path: Path) -> AsyncIterator[tuple[LocalStack, int]]:
    port = free_port()
    env = {"KUBERAY_TEMPORAL_METRICS_PORT": str(port), "KUBERAY_TEMPORAL_LOG_FORMAT": "json"}
    async with running_stack(tmp_path, "simulated", env) as stack:
        yield stack, port


async def test_a_rayjob_past_its_deadline_on_the_simulated_runtime(
    metrics_stack: tuple[LocalStack, int],
) -> None:
    stack, port = metrics_stack
    began = time.monotonic()
    await apply(stack, rayjob("deadline", activeDeadlineSeconds=8, entrypoint="sleep 600"))
    job = await reaches(stack, "deadline", "Failed", within=90)
    assert job["status"]["reason"] == "DeadlineExceeded"

    series = await scrape(port)
    cluster = check_rayjob_series(series, job, "Failed", time.monotonic() - began)
    # Pods of the simulated runtime turn Ready in a second: the cluster is provisioned.
    ident = {"name": cluster["name"], "namespace": "default", "uid": cluster["uid"]}
    assert of(series, "kuberay_cluster_condition_provisioned", **ident) == {
        frozenset({**ident, "condition": "true"}.items()): 1
    }
    (provisioned,) = of(series, "kuberay_cluster_provisioned_duration_seconds", **ident).values()
    assert 0 <= provisioned <= time.monotonic() - began
    check_sdk_series(series)

    # KubeRay's state series go with the CR.
    await stack.kubectl("delete", "rayjob", "deadline", "--wait=true", "--timeout=60s")

    async def gone() -> bool:
        series = await scrape(port)
        return not of(series, "kuberay_job_info", name="deadline") and not of(
            series, "kuberay_job_execution_duration_seconds", name="deadline"
        )

    await eventually(gone, within=60, message="the RayJob's series to go")
    # The stack's log lines are the dev command's own, or JSON objects.
    for line in stack.log.read_text().splitlines():
        if line and not line.startswith("kuberay-temporal dev:"):
            json.loads(line)


async def test_a_completed_rayjob_with_real_ray(tmp_path: Path) -> None:
    port = free_port()
    # Direct dashboard calls (the deployed default): the worker submits to and polls the head
    # pod's own address, found through the head Service and head pod the cluster owns
    # (`activities/dashboard/heads.py`), so no cluster DNS is asked. The local stack's worker
    # runs on the node, which routes to every process-runtime pod, as a worker in a cluster
    # reaches pods.
    env = {
        "KUBERAY_TEMPORAL_METRICS_PORT": str(port),
        "KUBERAY_TEMPORAL_DASHBOARD_ACCESS": "direct",
    }
    async with running_stack(tmp_path, "process", env) as stack:
        began = time.monotonic()
        await apply(stack, rayjob("done", submissionMode="HTTPMode", ttlSecondsAfterFinished=600))
        job = await reaches(stack, "done", "Complete", within=240)
        status = job["status"]
        assert status["jobStatus"] == "SUCCEEDED"
        # The status still shows KubeRay's Service address, whatever the worker called.
        head = f"{status['rayClusterName']}-head-svc.default.svc.cluster.local:8265"
        assert status["dashboardURL"] == head
        series = await scrape(port)
        check_rayjob_series(series, job, "Complete", time.monotonic() - began)
        check_sdk_series(series)
        await stack.kubectl("delete", "rayjob", "done", "--wait=true", "--timeout=120s")
