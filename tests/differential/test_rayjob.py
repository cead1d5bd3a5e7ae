"""RayJobs side by side: KubeRay's sample and the submission scenarios of KubeRay's e2e tests."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.differential.scenario import SideBySide, documents, side_by_side
from tests.differential.sides import capture
from tests.e2e.conftest import LocalStack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.kubernetes]


def job_first(name: str) -> list[dict[str, Any]]:
    """Every document of a KubeRay sample, the RayJob first."""
    return sorted(documents(name), key=lambda d: d["kind"] != "RayJob")


def finished(status: dict[str, Any]) -> bool:
    return status.get("jobDeploymentStatus") in {"Complete", "Failed"}


async def succeeded_the_same(both: SideBySide, name: str) -> None:
    """The RayJob ends SUCCEEDED on both sides with no unexplained difference, then goes."""
    await both.reach("rayjob", name, finished, "finished", within=240)
    for ns in both.recorders:
        assert (await both.status(ns, "rayjob", name))["jobStatus"] == "SUCCEEDED", ns
    found = await both.unexplained("RayJob", name)
    assert not found, "\n".join(found)
    await both.delete("rayjob", name)


async def test_sample_job_completes_the_same(stack: LocalStack) -> None:
    """`ray-job.sample.yaml` (K8sJobMode, the cluster kept): Complete, same objects."""
    job, *rest = job_first("ray-job.sample.yaml")
    name = job["metadata"]["name"]
    async with side_by_side(stack) as both:
        for doc in rest:
            await both.apply(doc)
        await both.apply(job)
        await succeeded_the_same(both, name)


def plain_job(name: str, entrypoint: str, **spec: Any) -> dict[str, Any]:
    """`ray-job.sample.yaml`'s RayJob without its ConfigMap, runtime env and mounts, renamed,
    running `entrypoint`, with `spec` added."""
    job = copy.deepcopy(job_first("ray-job.sample.yaml")[0])
    job["metadata"]["name"] = name
    job["spec"].pop("runtimeEnvYAML", None)
    job["spec"].update({"entrypoint": entrypoint, **spec})
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    head.pop("volumes")
    head["containers"][0].pop("volumeMounts")
    return job


async def test_failing_http_job_retries_the_same(stack: LocalStack) -> None:
    """KubeRay's e2e `rayjob_retry_test`: HTTPMode, the job exits 3, `backoffLimit: 1` gives it
    a second cluster, then Failed; the cluster is deleted after each attempt."""
    job = plain_job(
        name := "failing",
        "python -c 'import sys; sys.exit(3)'",
        submissionMode="HTTPMode",
        backoffLimit=1,
        shutdownAfterJobFinishes=True,
    )
    async with side_by_side(stack) as both:
        await both.apply(job)
        await both.reach("rayjob", name, finished, "finished", within=240)
        for ns in both.recorders:
            status = await both.status(ns, "rayjob", name)
            assert (status["jobDeploymentStatus"], status.get("failed")) == ("Failed", 2), ns
        found = await both.unexplained("RayJob", name)
        assert not found, "\n".join(found)
        await both.delete("rayjob", name)


def deployment_is(wanted: str) -> Callable[[dict[str, Any]], bool]:
    return lambda status: status.get("jobDeploymentStatus") == wanted


async def test_suspended_running_and_resumed_the_same(stack: LocalStack) -> None:
    """KubeRay's e2e `rayjob_suspend_test`, both halves on one job: created suspended (no
    cluster), resumed, suspended while Running (cluster and submitter Job deleted), resumed
    again, then Complete."""
    sleep = "python -c 'import time; time.sleep(30)'"
    # KubeRay refuses `suspend` without `shutdownAfterJobFinishes` (ValidationFailed).
    job = plain_job(name := "pausing", sleep, suspend=True, shutdownAfterJobFinishes=True)
    async with side_by_side(stack) as both:
        await both.apply(job)
        await both.reach("rayjob", name, deployment_is("Suspended"), "suspended at creation")
        for resumed in range(2):
            await both.patch("rayjob", name, {"spec": {"suspend": False}})
            await both.reach("rayjob", name, deployment_is("Running"), f"running ({resumed})")
            if resumed:
                break
            await both.patch("rayjob", name, {"spec": {"suspend": True}})
            await both.reach("rayjob", name, deployment_is("Suspended"), "suspended when running")
            for ns in both.recorders:  # KubeRay's test: the cluster and the Job are gone
                gone = f"{ns}: children gone"
                await both.settle(lambda ns=ns: _cluster_and_job_gone(both, ns), gone)
        await succeeded_the_same(both, name)


async def _cluster_and_job_gone(both: SideBySide, namespace: str) -> bool:
    """Whether the namespace holds no RayCluster, pod or batch Job (the RayJob's own head
    Service stays, on both sides)."""
    held = await capture(both.stack, namespace)
    return not any(key.startswith(("RayCluster/", "Pod/", "Job/")) for key in held)
