"""KubeRay's RayJob behaviours on the local stack with real Ray, driven with kubectl.

Each test applies one of our samples (`samples/rayjob.*.yaml`, adapted in memory: a name,
shorter TTLs, sometimes no worker), waits for the state KubeRay reaches, and checks what a
KubeRay user would look at: the CR status, the RayCluster and submitter Job it owns, and the
job as the head's dashboard reports it (read through the API server's service proxy). One
stack serves the whole module, and each test deletes its RayJob so at most one small Ray
cluster runs at a time on this shared 2-core machine.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml

from tests.e2e.conftest import LocalStack, running_stack
from tests.e2e.ray_tools import dashboard_path, job_status, submit_job
from tests.eventually import eventually
from tests.reference import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SAMPLES = REPO_ROOT / "samples"
QUICK = (
    "python -c \"import ray; ray.init(); print('ok', ray.get(ray.remote(lambda: 6 * 7).remote()))\""
)


@pytest_asyncio.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    async with running_stack(
        tmp_path_factory.mktemp("rayjob"), "process", control_plane="kubernetes"
    ) as running:
        yield running


def sample(mode: str) -> dict[str, Any]:
    return dict(yaml.safe_load((SAMPLES / f"rayjob.{mode}-mode.yaml").read_text()))


def adapt(doc: dict[str, Any], name: str, *, workers: bool = True, **spec: Any) -> dict[str, Any]:
    """The sample under another name, with spec fields replaced (None removes one)."""
    doc = copy.deepcopy(doc)
    doc["metadata"]["name"] = name
    for key, value in spec.items():
        if value is None:
            doc["spec"].pop(key, None)
        else:
            doc["spec"][key] = value
    if not workers and "rayClusterSpec" in doc["spec"]:
        doc["spec"]["rayClusterSpec"].pop("workerGroupSpecs", None)
    return doc


async def apply(stack: LocalStack, doc: dict[str, Any]) -> None:
    path = stack.state_dir.parent / f"{doc['kind']}-{doc['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    await stack.kubectl("apply", "-f", str(path))


async def get(stack: LocalStack, kind: str, name: str) -> dict[str, Any] | None:
    raw = await stack.kubectl("get", kind, name, "-o", "json", "--ignore-not-found")
    return dict(json.loads(raw)) if raw.strip() else None


async def status(stack: LocalStack, name: str) -> dict[str, Any]:
    found = await get(stack, "rayjob", name)
    return dict((found or {}).get("status") or {})


async def reaches(stack: LocalStack, name: str, state: str, within: float = 180) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        current = await status(stack, name)
        return current if current.get("jobDeploymentStatus") == state else None

    try:
        return await eventually(probe, within=within, message=f"{name} {state}")
    except AssertionError as err:
        events = await stack.kubectl("get", "events", "-o", "wide", check=False)
        raise AssertionError(f"{err}\nstatus: {await status(stack, name)}\n{events}") from None


async def delete(stack: LocalStack, kind: str, name: str) -> None:
    await stack.kubectl("delete", kind, name, "--ignore-not-found", "--wait=false")
    await eventually(lambda: _absent(stack, kind, name), within=120, message=f"{kind} {name} gone")


async def _absent(stack: LocalStack, kind: str, name: str) -> bool:
    return await get(stack, kind, name) is None


async def ray_jobs(stack: LocalStack, cluster: str) -> list[dict[str, Any]]:
    raw = await stack.kubectl("get", "--raw", dashboard_path(cluster, "api/jobs/"), check=False)
    try:
        return list(json.loads(raw))
    except ValueError:
        return []


async def cluster_pods(stack: LocalStack, cluster: str, node_type: str = "") -> list[str]:
    selector = f"ray.io/cluster={cluster}" + (f",ray.io/node-type={node_type}" if node_type else "")
    raw = await stack.kubectl("get", "pods", "-l", selector, "-o", "json")
    return [
        p["metadata"]["name"]
        for p in json.loads(raw)["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]


# --- exactly once across a killed worker (runs first: its own stack, in separate processes) ---


async def _ray_says(stack: LocalStack, cluster: str, job_id: str, wanted: str) -> bool:
    return await job_status(stack, cluster, job_id) == wanted


# --- the four modes ---------------------------------------------------------------------------


async def test_k8s_job_mode(stack: LocalStack) -> None:
    name = "job-k8s"
    await apply(stack, adapt(sample("k8s-job"), name, ttlSecondsAfterFinished=5))
    running = await reaches(stack, name, "Running")
    cluster_name = running["rayClusterName"]
    cluster = await get(stack, "raycluster", cluster_name)
    assert cluster is not None
    labels = cluster["metadata"]["labels"]
    assert labels["ray.io/originated-from-cr-name"] == name
    assert labels["ray.io/originated-from-crd"] == "RayJob"
    assert labels["ray.io/job-submission-mode"] == "K8sJobMode"
    assert labels["ray.io/rayjob-attempt"] == "1"
    assert cluster["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    done = await reaches(stack, name, "Complete")
    assert done["jobStatus"] == "SUCCEEDED" and done["succeeded"] == 1
    job = await get(stack, "job", name)
    assert job is not None
    assert job["metadata"]["labels"]["app.kubernetes.io/created-by"] == "kuberay-operator"
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["name"] == "ray-job-submitter"
    assert "--submission-id" in container["args"][0]
    assert await get(stack, "service", f"{name}-head-svc") is not None
    # shutdownAfterJobFinishes: the cluster goes after the TTL, the submitter Job stays.
    await eventually(
        lambda: _absent(stack, "raycluster", cluster_name), within=60, message="cluster deleted"
    )
    assert await get(stack, "job", name) is not None
    await delete(stack, "rayjob", name)


async def test_http_mode_and_end_to_complete_latency(stack: LocalStack) -> None:
    name = "job-http"
    await apply(stack, adapt(sample("http"), name, shutdownAfterJobFinishes=False, workers=False))
    running = await reaches(stack, name, "Running")
    cluster_name, job_id = running["rayClusterName"], running["jobId"]
    seen_at = 0.0

    async def complete() -> dict[str, Any] | None:
        nonlocal seen_at
        current = await status(stack, name)
        seen_at = time.time()
        return current if current.get("jobDeploymentStatus") == "Complete" else None

    done = await eventually(complete, within=180, message="Complete")
    jobs = [j for j in await ray_jobs(stack, cluster_name) if j.get("submission_id") == job_id]
    assert len(jobs) == 1 and jobs[0]["status"] == "SUCCEEDED"
    latency = seen_at - jobs[0]["end_time"] / 1000
    print(f"\nRay job end -> RayJob Complete (HTTPMode, observed by kubectl): {latency:.2f} s")
    assert done["jobStatus"] == "SUCCEEDED" and latency < 30
    await delete(stack, "rayjob", name)


async def test_sidecar_mode(stack: LocalStack) -> None:
    name = "job-sidecar"
    await apply(stack, adapt(sample("sidecar"), name, shutdownAfterJobFinishes=False))
    running = await reaches(stack, name, "Running")
    cluster = await get(stack, "raycluster", running["rayClusterName"])
    assert cluster is not None
    annotations = cluster["metadata"]["annotations"]
    assert annotations["ray.io/disable-provisioned-head-restart"] == "true"
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["restartPolicy"] == "Never"
    assert [c["name"] for c in head["containers"]] == ["ray-head", "ray-job-submitter"]
    done = await reaches(stack, name, "Complete")
    assert done["jobStatus"] == "SUCCEEDED"
    await delete(stack, "rayjob", name)


async def test_interactive_mode(stack: LocalStack) -> None:
    name = "job-interactive"
    await apply(stack, adapt(sample("interactive"), name, workers=False))
    waiting = await reaches(stack, name, "Waiting")
    cluster_name = waiting["rayClusterName"]
    await submit_job(stack, cluster_name, "my-own-job", "print('interactive')")
    patch = json.dumps({"spec": {"jobId": "my-own-job"}})
    await stack.kubectl("patch", "rayjob", name, "--type", "merge", "-p", patch)
    running = await reaches(stack, name, "Running", within=60)
    assert running["jobId"] == "my-own-job"
    done = await reaches(stack, name, "Complete")
    assert done["jobStatus"] == "SUCCEEDED"
    assert await job_status(stack, cluster_name, "my-own-job") == "SUCCEEDED"
    await delete(stack, "rayjob", name)


# --- retries, suspend, deadlines --------------------------------------------------------------


async def test_failing_entrypoint_is_retried_once(stack: LocalStack) -> None:
    name = "job-fails"
    doc = adapt(
        sample("http"),
        name,
        workers=False,
        backoffLimit=1,
        entrypoint="python -c 'import sys; sys.exit(3)'",
    )
    await apply(stack, doc)
    first = await reaches(stack, name, "Running")
    failed = await reaches(stack, name, "Failed", within=240)
    assert failed["failed"] == 2 and failed["reason"] == "AppFailed"
    assert failed["jobId"] != first["jobId"]
    assert failed["rayClusterName"] != first["rayClusterName"]
    await delete(stack, "rayjob", name)


async def test_suspended_then_resumed_succeeds(stack: LocalStack) -> None:
    name = "job-suspended"
    await apply(stack, adapt(sample("http"), name, workers=False, suspend=True))
    suspended = await reaches(stack, name, "Suspended", within=60)
    assert not suspended.get("rayClusterName")
    assert await cluster_pods_of_job(stack, name) == []
    patch = json.dumps({"spec": {"suspend": False}})
    await stack.kubectl("patch", "rayjob", name, "--type", "merge", "-p", patch)
    done = await reaches(stack, name, "Complete")
    assert done["jobStatus"] == "SUCCEEDED"
    await delete(stack, "rayjob", name)


async def cluster_pods_of_job(stack: LocalStack, name: str) -> list[str]:
    raw = await stack.kubectl("get", "rayclusters", "-o", "json")
    return [
        c["metadata"]["name"]
        for c in json.loads(raw)["items"]
        if c["metadata"].get("labels", {}).get("ray.io/originated-from-cr-name") == name
    ]


async def test_active_deadline_fails_a_long_job(stack: LocalStack) -> None:
    name = "job-deadline"
    doc = adapt(
        sample("http"),
        name,
        workers=False,
        activeDeadlineSeconds=45,
        entrypoint="python -c 'import time; time.sleep(600)'",
    )
    await apply(stack, doc)
    await reaches(stack, name, "Running")
    failed = await reaches(stack, name, "Failed", within=90)
    assert failed["reason"] == "DeadlineExceeded"
    await delete(stack, "rayjob", name)


# --- clusterSelector and deletion rules -------------------------------------------------------


async def test_existing_cluster_by_selector(stack: LocalStack) -> None:
    """`ray-job.use-existing-raycluster.yaml`: the job runs on a RayCluster the RayJob neither
    creates nor deletes (KubeRay's sample, with our cluster's name in the selector)."""
    cluster_name, name = "shared-cluster", "job-selector"
    spec = adapt(sample("http"), "unused", workers=False)["spec"]["rayClusterSpec"]
    meta = {"name": cluster_name, "namespace": "default"}
    await apply(
        stack, {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta, "spec": spec}
    )
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"entrypoint": QUICK, "clusterSelector": {"ray.io/cluster": cluster_name}},
    }
    await apply(stack, job)
    done = await reaches(stack, name, "Complete", within=240)
    assert done["rayClusterName"] == cluster_name and done["jobStatus"] == "SUCCEEDED"
    assert await cluster_pods_of_job(stack, name) == []  # no cluster of its own
    # K8sJobMode (the sample's default): the submitter Job ran against the shared cluster.
    assert await get(stack, "job", name) is not None
    await delete(stack, "rayjob", name)
    cluster = await get(stack, "raycluster", cluster_name)
    assert cluster is not None and not cluster["metadata"].get("deletionTimestamp")
    assert not cluster["metadata"].get("ownerReferences")
    assert await cluster_pods(stack, cluster_name, "head")
    await delete(stack, "raycluster", cluster_name)


async def test_deletion_rules_in_order(stack: LocalStack) -> None:
    name = "job-rules"
    rules = [("DeleteWorkers", 5), ("DeleteCluster", 25), ("DeleteSelf", 35)]
    strategy = {
        "deletionRules": [
            {"policy": p, "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": t}}
            for p, t in rules
        ]
    }
    doc = adapt(sample("http"), name, shutdownAfterJobFinishes=None, deletionStrategy=strategy)
    await apply(stack, doc)
    done = await reaches(stack, name, "Complete", within=240)
    cluster_name = done["rayClusterName"]

    async def workers_suspended() -> bool:
        found = await get(stack, "raycluster", cluster_name)
        groups = (found or {}).get("spec", {}).get("workerGroupSpecs") or []
        return bool(groups) and all(g.get("suspend") for g in groups)

    await eventually(workers_suspended, within=60, message="workers suspended")
    await eventually(
        lambda: _no_pods(stack, cluster_name, "worker"), within=60, message="worker pods gone"
    )
    assert await get(stack, "raycluster", cluster_name) is not None
    await eventually(
        lambda: _absent(stack, "raycluster", cluster_name), within=60, message="cluster deleted"
    )
    assert await get(stack, "rayjob", name) is not None
    await eventually(lambda: _absent(stack, "rayjob", name), within=60, message="RayJob deleted")


async def _no_pods(stack: LocalStack, cluster: str, node_type: str) -> bool:
    return await cluster_pods(stack, cluster, node_type) == []
