"""Workload controllers inside devcluster, driven through the API as a kubelet would.

No kubelet runs here: the tests write pod status themselves (phase, Ready) through the
status subresource, which is exactly what the controllers react to.
"""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client

from tests.devcluster.conftest import Kubectl
from tests.eventually import eventually

JsonObject = dict[str, Any]
TEMPLATE = {
    "metadata": {"labels": {"app": "w"}},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}


async def set_pod_status(
    core: client.CoreV1Api, namespace: str, name: str, phase: str, ready: bool = False
) -> None:
    status = {
        "phase": phase,
        "podIP": "127.0.0.1",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    await core.patch_namespaced_pod_status(name, namespace, {"status": status})


async def pods_of(core: client.CoreV1Api, namespace: str, selector: str) -> list[Any]:
    return list((await core.list_namespaced_pod(namespace, label_selector=selector)).items)


def job_body(name: str, backoff_limit: int = 6, **spec: Any) -> JsonObject:
    template = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": template, "backoffLimit": backoff_limit, **spec},
    }


async def test_job_pod_success_completes_the_job(
    api: client.ApiClient, namespace: str, kubectl: Kubectl
) -> None:
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    job = await batch.create_namespaced_job(namespace, job_body("submit"))
    pods = await eventually(lambda: pods_of(core, namespace, "job-name=submit"))
    pod = pods[0]
    assert pod.metadata.name.startswith("submit-") and len(pod.metadata.name) == len("submit-") + 5
    assert pod.metadata.labels["batch.kubernetes.io/controller-uid"] == job.metadata.uid
    assert pod.metadata.owner_references[0].kind == "Job"
    assert pod.metadata.owner_references[0].controller is True
    await set_pod_status(core, namespace, pod.metadata.name, "Succeeded")
    waited = await kubectl.run(
        "wait", "-n", namespace, "--for=condition=Complete", "job/submit", "--timeout=20s"
    )
    assert waited.code == 0, waited.err
    done = await batch.read_namespaced_job("submit", namespace)
    assert done.status.succeeded == 1 and not done.status.active
    assert done.status.start_time and done.status.completion_time
    assert len(await pods_of(core, namespace, "job-name=submit")) == 1


async def test_failing_job_honours_backoff_limit(api: client.ApiClient, namespace: str) -> None:
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    await batch.create_namespaced_job(namespace, job_body("fails", backoff_limit=1))
    failed: set[str] = set()

    async def fail_next() -> bool:
        for pod in await pods_of(core, namespace, "job-name=fails"):
            if pod.metadata.name not in failed:
                failed.add(pod.metadata.name)
                await set_pod_status(core, namespace, pod.metadata.name, "Failed")
        job = await batch.read_namespaced_job("fails", namespace)
        return any(c.type == "Failed" for c in job.status.conditions or [])

    await eventually(fail_next, within=20)
    job = await batch.read_namespaced_job("fails", namespace)
    reasons = {c.type: c.reason for c in job.status.conditions}
    assert reasons == {"FailureTarget": "BackoffLimitExceeded", "Failed": "BackoffLimitExceeded"}
    assert job.status.failed == 2 and len(failed) == 2  # backoffLimit 1: one retry, then stop


async def test_active_deadline_fails_a_running_job(api: client.ApiClient, namespace: str) -> None:
    batch = client.BatchV1Api(api)
    await batch.create_namespaced_job(namespace, job_body("slow", activeDeadlineSeconds=1))

    async def failed_reason() -> str | None:
        job = await batch.read_namespaced_job("slow", namespace)
        return next((c.reason for c in job.status.conditions or [] if c.type == "Failed"), None)

    assert await eventually(failed_reason, within=10) == "DeadlineExceeded"


def deployment_body(name: str, image: str, replicas: int = 2) -> JsonObject:
    template = {**TEMPLATE, "spec": {"containers": [{"name": "c", "image": image}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "w"}},
            "template": template,
        },
    }


async def make_ready(core: client.CoreV1Api, namespace: str, selector: str, count: int) -> bool:
    pods = [
        p for p in await pods_of(core, namespace, selector) if not p.metadata.deletion_timestamp
    ]
    for pod in pods:
        if pod.status.phase != "Running":
            await set_pod_status(core, namespace, pod.metadata.name, "Running", ready=True)
    return len(pods) == count


async def test_deployment_rolls_out_through_replica_sets(
    api: client.ApiClient, namespace: str, kubectl: Kubectl
) -> None:
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    await apps.create_namespaced_deployment(namespace, deployment_body("redis", "redis:7.4.0"))
    await eventually(lambda: make_ready(core, namespace, "app=w", 2), within=10)
    status = await kubectl.run(
        "rollout", "status", "-n", namespace, "deployment/redis", "--timeout=20s"
    )
    assert status.code == 0 and "successfully rolled out" in status.out, status.err
    first = (await apps.list_namespaced_replica_set(namespace)).items
    assert len(first) == 1 and first[0].metadata.labels["pod-template-hash"]
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "redis:8"}]}}}}
    await apps.patch_namespaced_deployment("redis", namespace, patch)

    async def rolled() -> bool:
        await make_ready(core, namespace, "app=w", 2)
        dep = await apps.read_namespaced_deployment("redis", namespace)
        s = dep.status
        return (s.observed_generation, s.updated_replicas, s.replicas, s.available_replicas) == (
            2,
            2,
            2,
            2,
        )

    await eventually(rolled, within=20)
    sets = {
        rs.metadata.name: rs for rs in (await apps.list_namespaced_replica_set(namespace)).items
    }
    assert len(sets) == 2
    assert sorted(rs.spec.replicas for rs in sets.values()) == [0, 2]
    pods = await pods_of(core, namespace, "app=w")
    live = [p for p in pods if not p.metadata.deletion_timestamp]
    assert {p.spec.containers[0].image for p in live} == {"redis:8"}


async def test_stateful_set_creates_ordinals_in_order(
    api: client.ApiClient, namespace: str
) -> None:
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "redis"},
        "spec": {
            "replicas": 2,
            "serviceName": "redis",
            "selector": {"matchLabels": {"app": "w"}},
            "template": TEMPLATE,
        },
    }
    await apps.create_namespaced_stateful_set(namespace, body)
    first = await eventually(lambda: pods_of(core, namespace, "app=w"))
    assert [p.metadata.name for p in first] == ["redis-0"]
    assert first[0].spec.hostname == "redis-0" and first[0].spec.subdomain == "redis"
    await set_pod_status(core, namespace, "redis-0", "Running", ready=True)

    async def both() -> list[str]:
        names = [p.metadata.name for p in await pods_of(core, namespace, "app=w")]
        return names if len(names) == 2 else []

    assert await eventually(both) == ["redis-0", "redis-1"]
    await set_pod_status(core, namespace, "redis-1", "Running", ready=True)

    async def ready() -> bool:
        sts = await apps.read_namespaced_stateful_set("redis", namespace)
        return sts.status.ready_replicas == 2

    await eventually(ready)
