"""RayJobs side by side: KubeRay's sample and the submission scenarios of KubeRay's e2e tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.differential.scenario import documents, side_by_side
from tests.e2e.conftest import LocalStack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.kubernetes]


def job_first(name: str) -> list[dict[str, Any]]:
    """Every document of a KubeRay sample, the RayJob first."""
    return sorted(documents(name), key=lambda d: d["kind"] != "RayJob")


def finished(status: dict[str, Any]) -> bool:
    return status.get("jobDeploymentStatus") in {"Complete", "Failed"}


async def test_sample_job_completes_the_same(stack: LocalStack) -> None:
    """`ray-job.sample.yaml` (K8sJobMode, the cluster kept): Complete, same objects."""
    job, *rest = job_first("ray-job.sample.yaml")
    name = job["metadata"]["name"]
    async with side_by_side(stack) as both:
        for doc in rest:
            await both.apply(doc)
        await both.apply(job)
        await both.reach("rayjob", name, finished, "finished", within=240)
        for ns in both.recorders:
            assert (await both.status(ns, "rayjob", name))["jobStatus"] == "SUCCEEDED", ns
        found = await both.unexplained("RayJob", name)
        assert not found, "\n".join(found)
        await both.delete("rayjob", name)


async def test_failing_http_job_retries_the_same(stack: LocalStack) -> None:
    """KubeRay's e2e `rayjob_retry_test`: HTTPMode, the job exits 3, `backoffLimit: 1` gives it
    a second cluster, then Failed; the cluster is deleted after each attempt."""
    job, *_ = job_first("ray-job.sample.yaml")
    job = copy.deepcopy(job)
    job["metadata"]["name"] = name = "failing"
    job["spec"].pop("runtimeEnvYAML", None)
    job["spec"].update(
        {
            "entrypoint": "python -c 'import sys; sys.exit(3)'",
            "submissionMode": "HTTPMode",
            "backoffLimit": 1,
            "shutdownAfterJobFinishes": True,
        }
    )
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    head.pop("volumes")
    head["containers"][0].pop("volumeMounts")
    async with side_by_side(stack) as both:
        await both.apply(job)
        await both.reach("rayjob", name, finished, "finished", within=240)
        for ns in both.recorders:
            status = await both.status(ns, "rayjob", name)
            assert (status["jobDeploymentStatus"], status.get("failed")) == ("Failed", 2), ns
        found = await both.unexplained("RayJob", name)
        assert not found, "\n".join(found)
        await both.delete("rayjob", name)
