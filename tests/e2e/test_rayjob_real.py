"""KubeRay's RayJob behaviours on the local stack with real Ray, driven with kubectl.

Two sets of RayJobs, one stack (the real control plane, pods as processes):

* KubeRay's own samples (`ray-job.<name>.yaml`, and the RayCronJob samples that create such
  RayJobs), each reaching KubeRay's state, with what a
  KubeRay user would look at checked on the way: the status, the RayCluster and submitter Job
  it owns and their labels, the pods, Services and deletion rules. The files are applied with
  kubectl after `localise`, which changes only what cannot work on one offline machine or in a
  test's time budget, and nothing the controller decides on: `runtimeEnvYAML`'s `pip` list goes
  (pinned `requests==2.26.0` and `pendulum==2.1.2` would be built per job from source;
  `env_vars` stay), and with it the sample code's assertion on the pinned `requests` version;
  deletion-rule TTLs are divided by `TTL_DIVISOR` (their order and policies are kept).
  `ray-job.kueue-toy-sample.yaml` runs ten minutes (its job counts to 600, a second a step), so
  it runs only at full size, `KUBERAY_TEMPORAL_REAL_SAMPLES=all`; so do `resources`,
  `deletion-rules`, `custom-head-svc` and `platform-events` (`full_set`), whose controller
  decisions the builder and workflow tests check without real Ray, to keep CI within its hour.
* Our HTTPMode sample (`samples/rayjob.http-mode.yaml`, adapted in memory) for what the samples
  do not reach: failure and retries, suspend and resume, the active deadline, and how soon a
  finished Ray job shows as Complete.

Each test deletes what it made, so one small Ray cluster runs at a time on this 2-core machine.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import pytest_asyncio
import yaml

from activities.raycronjob.schedules import described
from crds.feature_gates import Gate
from tests.e2e.conftest import LocalStack, gates_on, running_stack
from tests.e2e.ray_tools import job_status, submit_job
from tests.e2e.rayjob_tools import (
    absent,
    adapt,
    apply,
    cluster_pods,
    clusters_of_job,
    delete,
    get,
    ray_jobs,
    reaches,
    sample,
    status,
)
from tests.eventually import eventually
from tests.reference import KUBERAY_SAMPLES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420), pytest.mark.kubernetes]

TTL_DIVISOR = 3
SUSPEND = json.dumps({"spec": {"suspend": True}})
PINNED_CHECK = 'assert requests.__version__ == "2.26.0"'


@pytest_asyncio.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalStack]:
    # KubeRay's RayCronJob samples run here too: its gate on, as KubeRay's e2e turns it on.
    async with running_stack(
        tmp_path_factory.mktemp("rayjob"),
        "process",
        gates_on(Gate.RAY_CRON_JOB),
        control_plane="kubernetes",
    ) as running:
        yield running


# --- KubeRay's samples --------------------------------------------------------------------------


def localise(doc: dict[str, Any]) -> dict[str, Any]:
    """One document of a sample file, changed only as the module docstring says."""
    if doc.get("kind") in ("RayJob", "RayCronJob"):
        spec = doc["spec"] if doc["kind"] == "RayJob" else doc["spec"]["jobTemplate"]
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
    assert submitter["metadata"]["labels"]["app.kubernetes.io/created-by"] == "kuberay-operator"
    container = submitter["spec"]["template"]["spec"]["containers"][0]
    assert container["name"] == "ray-job-submitter"
    assert "--submission-id" in container["args"][0]
    assert await get(stack, "service", f"{name}-head-svc") is not None
    # shutdownAfterJobFinishes is unset: the cluster stays for the user, labelled as KubeRay does.
    cluster = await get(stack, "raycluster", done["rayClusterName"])
    assert cluster is not None
    labels = cluster["metadata"]["labels"]
    assert labels["ray.io/originated-from-cr-name"] == name
    assert labels["ray.io/originated-from-crd"] == "RayJob"
    assert labels["ray.io/job-submission-mode"] == "K8sJobMode"
    assert labels["ray.io/rayjob-attempt"] == "1"
    assert cluster["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    await cleanup(stack, rayjob, ("configmap", "ray-job-code-sample"))


async def test_cronjob_samples_schedule_rayjobs_that_complete(stack: LocalStack) -> None:
    for file in ("ray-cronjob.sample.yaml", "ray-cronjob-timezone.sample.yaml"):
        for doc in yaml.safe_load_all((KUBERAY_SAMPLES / file).read_text()):
            if doc:
                await apply(stack, localise(doc))
    # Every minute: the first tick's RayJob, then suspended (one Ray cluster at a time here).
    name = "raycronjob-sample"
    selector = f"ray.io/cronjob-name={name}"

    async def first() -> dict[str, Any] | None:
        raw = await stack.kubectl("get", "rayjobs", "-l", selector, "-o", "json")
        items = json.loads(raw)["items"]
        return items[0] if items else None

    rayjob = await eventually(first, within=90, message="the first tick's RayJob")
    await stack.kubectl("patch", "raycronjob", name, "--type", "merge", "-p", SUSPEND)
    job_name = rayjob["metadata"]["name"]
    tick = rayjob["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"]
    assert rayjob["metadata"]["ownerReferences"][0]["kind"] == "RayCronJob"
    done = await reaches(stack, job_name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED"
    cronjob = await get(stack, "raycronjob", name)
    assert cronjob is not None and cronjob["status"]["lastScheduleTime"] >= tick

    # 21:45 in Taipei (UTC+8) is 13:45 UTC: the Schedule reads the zone as KubeRay does.
    zoned = await get(stack, "raycronjob", "raycronjob-timezone-sample")
    assert zoned is not None
    schedule_id = f"raycronjob/default/raycronjob-timezone-sample/{zoned['metadata']['uid']}"

    async def next_firing() -> datetime | None:
        found = await described(stack.client.get_schedule_handle(schedule_id))
        return found.info.next_action_times[0] if found and found.info.next_action_times else None

    upcoming = await eventually(next_firing, within=30, message="the zoned Schedule")
    assert (upcoming.astimezone(UTC).hour, upcoming.minute) == (13, 45)
    await delete(stack, "raycronjob", name)
    await delete(stack, "raycronjob", "raycronjob-timezone-sample")
    await delete(stack, "configmap", "ray-job-code-sample")
    await eventually(lambda: absent(stack, "rayjob", job_name), within=60, message="collected")


async def test_shutdown_deletes_the_cluster_after_its_ttl(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "shutdown")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED"
    cluster = done["rayClusterName"]
    await eventually(lambda: absent(stack, "raycluster", cluster), within=90, message="deleted")
    # The RayJob and its submitter Job stay after the cluster.
    assert (await get(stack, "rayjob", name)) is not None
    assert (await get(stack, "job", name)) is not None
    await cleanup(stack, rayjob, ("configmap", "ray-job-code-sample"))


@pytest.mark.full_set
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
    cluster = await get(stack, "raycluster", done["rayClusterName"])
    assert cluster is not None
    annotations = cluster["metadata"]["annotations"]
    assert annotations["ray.io/disable-provisioned-head-restart"] == "true"
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["restartPolicy"] == "Never"
    assert [c["name"] for c in head["containers"]] == ["ray-head", "ray-job-submitter"]
    await cleanup(stack, rayjob, ("configmap", "ray-job-code-sample"))


async def test_interactive_mode(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "interactive-mode")
    name = rayjob["metadata"]["name"]
    waiting = await reaches(stack, name, "Waiting", within=300)
    cluster = waiting["rayClusterName"]
    await submit_job(stack, cluster, "interactive-1", "print('hello from the user')")
    patch = json.dumps({"spec": {"jobId": "interactive-1"}})
    await stack.kubectl("patch", "rayjob", name, "--type", "merge", "-p", patch)
    running = await reaches(stack, name, "Running", within=60)
    assert running["jobId"] == "interactive-1"
    done = await reaches(stack, name, "Complete", within=120)
    assert done["jobStatus"] == "SUCCEEDED" and done["jobId"] == "interactive-1"
    assert await job_status(stack, cluster, "interactive-1") == "SUCCEEDED"
    await cleanup(stack, rayjob)


async def test_use_existing_raycluster(stack: LocalStack) -> None:
    (cluster,) = yaml.safe_load_all((KUBERAY_SAMPLES / "ray-cluster.sample.yaml").read_text())
    cluster["metadata"]["name"] = "ray-cluster-kuberay"
    await apply(stack, cluster)
    rayjob = await apply_sample(stack, "use-existing-raycluster")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED" and done["rayClusterName"] == "ray-cluster-kuberay"
    assert await clusters_of_job(stack, name) == []  # no cluster of its own
    # K8sJobMode (the sample's default): the submitter Job ran against the existing cluster.
    assert await get(stack, "job", name) is not None
    await delete(stack, "rayjob", name)
    kept = await get(stack, "raycluster", "ray-cluster-kuberay")
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")
    assert not kept["metadata"].get("ownerReferences")
    assert await cluster_pods(stack, "ray-cluster-kuberay", "head")
    await delete(stack, "raycluster", "ray-cluster-kuberay")


@pytest.mark.full_set
async def test_deletion_rules_stage_by_stage(stack: LocalStack) -> None:
    rayjob = await apply_sample(stack, "deletion-rules")
    name = rayjob["metadata"]["name"]
    done = await reaches(stack, name, "Complete", within=300)
    assert done["jobStatus"] == "SUCCEEDED"
    cluster = done["rayClusterName"]
    # SUCCEEDED rules at 30/60/90 s (here 10/20/30 s): workers, then the cluster, then the RayJob.
    await eventually(lambda: _workers_suspended(stack, cluster), within=60, message="suspended")
    await eventually(
        lambda: _only_head(stack, cluster), within=60, message="workers deleted, head kept"
    )
    await eventually(lambda: absent(stack, "raycluster", cluster), within=60, message="cluster")
    assert await get(stack, "rayjob", name) is not None
    await eventually(lambda: absent(stack, "rayjob", name), within=60, message="RayJob deleted")


async def _workers_suspended(stack: LocalStack, cluster: str) -> bool:
    found = await get(stack, "raycluster", cluster)
    groups = (found or {}).get("spec", {}).get("workerGroupSpecs") or []
    return bool(groups) and all(g.get("suspend") for g in groups)


async def _only_head(stack: LocalStack, cluster: str) -> bool:
    workers = await cluster_pods(stack, cluster, "worker")
    heads = await cluster_pods(stack, cluster, "head")
    return not workers and len(heads) == 1


@pytest.mark.full_set
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


@pytest.mark.full_set
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


# --- our HTTPMode sample: failure, suspend, deadline, latency ----------------------------------


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
    assert await clusters_of_job(stack, name) == []
    patch = json.dumps({"spec": {"suspend": False}})
    await stack.kubectl("patch", "rayjob", name, "--type", "merge", "-p", patch)
    done = await reaches(stack, name, "Complete")
    assert done["jobStatus"] == "SUCCEEDED"
    await delete(stack, "rayjob", name)


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
        await eventually(lambda: absent(stack, "raycluster", cluster), within=90, message="gone")
        await delete(stack, "rayjob", name)
