"""KubeRay's own RayJob samples on the local stack with real Ray, each reaching KubeRay's state.

The files are read from KubeRay's sample set and applied with kubectl after `localise`, which
changes only what cannot work on one offline machine or in a test's time budget, and nothing
the controller decides on:

* `runtimeEnvYAML`'s `pip` list goes (pinned `requests==2.26.0` and `pendulum==2.1.2` would be
  built per job from source; `env_vars` stay), and with it the sample code's assertion on the
  pinned `requests` version;
* deletion-rule TTLs are divided by `TTL_DIVISOR` (their order and policies are kept).

`ray-job.kueue-toy-sample.yaml` runs ten minutes (its job counts to 600, a second a step), so
it runs only at full size, `KUBERAY_TEMPORAL_REAL_SAMPLES=all`.

`ray-job.use-existing-raycluster.yaml` selects `ray-cluster-kuberay`; the test creates it from
KubeRay's `ray-cluster.sample.yaml` under that name. One stack serves the module and each test
deletes what it made, so one sample's Ray runs at a time on this 2-core machine.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml

from tests.e2e.conftest import LocalStack, running_stack
from tests.e2e.ray_tools import submit_job
from tests.e2e.test_rayjob_real import (
    _absent,
    apply,
    cluster_pods,
    cluster_pods_of_job,
    delete,
    get,
    reaches,
)
from tests.eventually import eventually
from tests.reference import KUBERAY_SAMPLES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

TTL_DIVISOR = 3
PINNED_CHECK = 'assert requests.__version__ == "2.26.0"'


@pytest_asyncio.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    async with running_stack(
        tmp_path_factory.mktemp("kuberay-rayjobs"), "process", control_plane="kubernetes"
    ) as running:
        yield running


def localise(doc: dict[str, Any]) -> dict[str, Any]:
    """One document of a sample file, changed only as the module docstring says."""
    if doc.get("kind") == "RayJob":
        spec = doc["spec"]
        if spec.get("runtimeEnvYAML"):
            runtime_env = yaml.safe_load(spec["runtimeEnvYAML"])
            runtime_env.pop("pip", None)
            spec["runtimeEnvYAML"] = yaml.safe_dump(runtime_env)
        for rule in (spec.get("deletionStrategy") or {}).get("deletionRules") or []:
            rule["condition"]["ttlSeconds"] //= TTL_DIVISOR
    if doc.get("kind") == "ConfigMap":
        doc["data"] = {
            key: "\n".join(line for line in code.splitlines() if PINNED_CHECK not in line)
            for key, code in doc["data"].items()
        }
    return doc


async def apply_sample(stack: LocalStack, sample: str) -> dict[str, Any]:
    """Apply every document of `ray-job.<sample>.yaml`; returns the RayJob."""
    docs = [
        d for d in yaml.safe_load_all((KUBERAY_SAMPLES / f"ray-job.{sample}.yaml").read_text()) if d
    ]
    for doc in docs:
        await apply(stack, localise(doc))
    (rayjob,) = [d for d in docs if d["kind"] == "RayJob"]
    return rayjob


async def cleanup(stack: LocalStack, rayjob: dict[str, Any], *others: tuple[str, str]) -> None:
    await delete(stack, "rayjob", rayjob["metadata"]["name"])
    for kind, name in others:
        await delete(stack, kind, name)


async def test_sample_k8s_job_mode(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "sample")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED" and done["succeeded"] == 1
    submitter = await get(stack, "job", name)
    assert submitter is not None and submitter["status"].get("succeeded") == 1
    # shutdownAfterJobFinishes is unset: the cluster stays for the user.
    assert await get(stack, "raycluster", done["rayClusterName"]) is not None
    await cleanup(stack, rayjob, ("configmap", "ray-job-code-sample"))


async def test_shutdown_deletes_the_cluster_after_its_ttl(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "shutdown")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED"
    cluster = done["rayClusterName"]
    await eventually(lambda: _absent(stack, "raycluster", cluster), within=90, message="deleted")
    assert (await get(stack, "rayjob", name)) is not None
    await cleanup(stack, rayjob, ("configmap", "ray-job-code-sample"))


async def test_resources_reach_ray(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "resources")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED"
    cluster = await get(stack, "raycluster", done["rayClusterName"])
    assert cluster is not None
    head = cluster["spec"]["headGroupSpec"]["rayStartParams"]
    assert head["num-cpus"] == "3" and head["num-gpus"] == "2"
    await cleanup(stack, rayjob, ("configmap", "ray-job-code-sample"))


async def test_sidecar_mode(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "sidecar-mode")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED"
    assert await get(stack, "job", name) is None  # no submitter Job in SidecarMode
    await cleanup(stack, rayjob, ("configmap", "ray-job-code-sample"))


async def test_interactive_mode(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "interactive-mode")
    name = rayjob["metadata"]["name"]
    waiting = await reaches(stack, name, "Waiting", within=300)
    cluster = waiting["rayClusterName"]
    await submit_job(stack, cluster, "interactive-1", "print('hello from the user')")
    patch = json.dumps({"spec": {"jobId": "interactive-1"}})
    await stack.kubectl("patch", "rayjob", name, "--type", "merge", "-p", patch)
    done = await reaches(stack, name, "Complete", within=120)
    assert done["jobStatus"] == "SUCCEEDED" and done["jobId"] == "interactive-1"
    await cleanup(stack, rayjob)


async def test_use_existing_raycluster(stack: LocalStack) -> None:
    (cluster,) = yaml.safe_load_all((KUBERAY_SAMPLES / "ray-cluster.sample.yaml").read_text())
    cluster["metadata"]["name"] = "ray-cluster-kuberay"
    await apply(stack, cluster)
    rayjob = await apply_sample(stack, "use-existing-raycluster")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED" and done["rayClusterName"] == "ray-cluster-kuberay"
    assert await cluster_pods_of_job(stack, name) == []
    await delete(stack, "rayjob", name)
    kept = await get(stack, "raycluster", "ray-cluster-kuberay")
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")
    await delete(stack, "raycluster", "ray-cluster-kuberay")


async def test_deletion_rules_stage_by_stage(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "deletion-rules")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED"
    cluster = done["rayClusterName"]
    # SUCCEEDED rules at 30/60/90 s (here 10/20/30 s): workers, then the cluster, then the RayJob.
    await eventually(
        lambda: _only_head(stack, cluster), within=60, message="workers deleted, head kept"
    )
    await eventually(lambda: _absent(stack, "raycluster", cluster), within=60, message="cluster")
    assert await get(stack, "rayjob", name) is not None
    await eventually(lambda: _absent(stack, "rayjob", name), within=60, message="RayJob deleted")


async def _only_head(stack: LocalStack, cluster: str) -> bool:
    workers = await cluster_pods(stack, cluster, "worker")
    heads = await cluster_pods(stack, cluster, "head")
    return not workers and len(heads) == 1


async def test_custom_head_service_carries_the_job(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "custom-head-svc")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED"
    service = await get(stack, "service", "custom-ray-head-service-name")
    assert service is not None
    assert service["spec"]["selector"]["ray.io/cluster"] == done["rayClusterName"]
    assert await get(stack, "service", f"{done['rayClusterName']}-head-svc") is None
    await cleanup(stack, rayjob, ("configmap", "ray-job-code-sample"))


async def test_platform_events_head_runs_as_its_service_account(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "platform-events")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED"
    (head,) = await cluster_pods(stack, done["rayClusterName"], "head")
    pod = await get(stack, "pod", head)
    assert pod is not None and pod["spec"]["serviceAccountName"] == "rayjob-platform-events"
    await cleanup(
        stack,
        rayjob,
        ("configmap", "ray-job-code-sample"),
        ("rolebinding", "rayjob-platform-events-reader-binding"),
        ("role", "rayjob-platform-events-reader"),
        ("serviceaccount", "rayjob-platform-events"),
    )


if os.environ.get("KUBERAY_TEMPORAL_REAL_SAMPLES") == "all":

    @pytest.mark.timeout(1200)
    async def test_kueue_toy_sample_without_kueue(stack: LocalStack) -> None:
        # generateName: created, not applied, as KubeRay's docs do.
        path = KUBERAY_SAMPLES / "ray-job.kueue-toy-sample.yaml"
        name = (await stack.kubectl("create", "-f", str(path), "-o", "name")).strip()
        name = name.split("/")[-1]
        done = await reaches(stack, name, "Complete", within=900)
        assert done["jobStatus"] == "SUCCEEDED"
        cluster = done["rayClusterName"]  # shutdownAfterJobFinishes, TTL 10 s
        await eventually(lambda: _absent(stack, "raycluster", cluster), within=90, message="gone")
        await delete(stack, "rayjob", name)
