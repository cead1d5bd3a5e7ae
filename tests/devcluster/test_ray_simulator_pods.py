"""Simulated Ray on devcluster's simulated runtime, reached the way the operator reaches Ray.

A pod running `ray start --head` answers the dashboard API through the API server's service
proxy (and Serve's health through the pod proxy) once it is Running; a batch Job running
KubeRay's K8sJobMode submitter script submits to it through the head Service and completes;
a SidecarMode submitter in the head pod exits 1 when its job fails; token auth follows the
head container's environment (a head whose token Secret is missing waits, as a kubelet keeps
it, in CreateContainerConfigError); a deleted head answers no more; a Redis cleanup Job
completes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest_asyncio

from activities.builders.rayjob import submit_script
from activities.builders.redis_cleanup_job import build_redis_cleanup_job
from crds.enums import JobSubmissionMode
from devcluster.ray_simulator.pods import auth_error
from devcluster.server import DevCluster
from tests.activities.builders.fixtures import cluster, instance_dict
from tests.devcluster.test_ray_simulator import kuberay_job
from tests.eventually import eventually

NS = "default"
PROXY = f"/api/v1/namespaces/{NS}/services/h-svc:dashboard/proxy"


@pytest_asyncio.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    cluster = DevCluster(tmp_path, runtime="simulated", ready_delay=0.1)
    await cluster.start()
    try:
        async with httpx.AsyncClient(base_url=cluster.url, timeout=10) as client:
            yield client
    finally:
        await cluster.stop()


def head_pod(name: str, *extra: dict[str, Any], env: list[Any] | None = None) -> dict[str, Any]:
    ray = {
        "name": "ray-head",
        "image": "rayproject/ray:2.60.0",
        "command": ["/bin/bash", "-c", "--"],
        "args": ["ulimit -n 65536; ray start --head --dashboard-port=8265 --block"],
        "ports": [{"name": "dashboard", "containerPort": 8265}],
        "env": env or [],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"restartPolicy": "Never", "containers": [ray, *extra]},
    }


async def create(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> None:
    response = await http.post(path, json=body)
    assert response.status_code == 201, response.text


async def head_with_service(http: httpx.AsyncClient, pod: dict[str, Any]) -> None:
    await create(http, f"/api/v1/namespaces/{NS}/pods", pod)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "h-svc"},
        "spec": {
            "selector": {"app": pod["metadata"]["name"]},
            "ports": [{"name": "dashboard", "port": 8265, "targetPort": 8265}],
        },
    }
    await create(http, f"/api/v1/namespaces/{NS}/services", service)

    async def healthy() -> bool:
        return (await http.get(f"{PROXY}/api/gcs_healthz")).text == "success"

    await eventually(healthy, message="the simulated dashboard through the service proxy")


async def test_jobs_and_serve_through_the_proxies(http: httpx.AsyncClient) -> None:
    await head_with_service(http, head_pod("h"))
    submitted = await http.post(
        f"{PROXY}/api/jobs/", json={"entrypoint": "sleep 0.3", "submission_id": "s1"}
    )
    assert submitted.json() == {"job_id": "s1", "submission_id": "s1"}
    again = await http.post(f"{PROXY}/api/jobs/", json={"entrypoint": "x", "submission_id": "s1"})
    assert again.status_code == 500 and "Please use a different submission_id" in again.text
    assert (await http.get(f"{PROXY}/api/jobs/nope")).status_code == 404
    # Ray's web page, which `kubectl ray job submit` waits for; and the running container's
    # log, empty (`kubectl logs` prints nothing rather than "waiting to start").
    assert (await http.get(f"{PROXY}/")).status_code == 200
    log = await http.get(f"/api/v1/namespaces/{NS}/pods/h/log", params={"container": "ray-head"})
    assert (log.status_code, log.text) == (200, "")

    async def succeeded() -> bool:
        return (await http.get(f"{PROXY}/api/jobs/s1")).json()["status"] == "SUCCEEDED"

    await eventually(succeeded, message="job s1 SUCCEEDED")

    health = f"/api/v1/namespaces/{NS}/pods/h:8000/proxy/-/healthz"
    assert (await http.get(health)).status_code == 503  # Serve not started: nothing listens
    config = {"applications": [{"name": "app", "import_path": "m:app", "route_prefix": "/"}]}
    assert (await http.put(f"{PROXY}/api/serve/applications/", json=config)).status_code == 200

    async def running() -> bool:
        answer = await http.get(
            f"{PROXY}/api/serve/applications/", params={"api_type": "declarative"}
        )
        return answer.json()["applications"]["app"]["status"] == "RUNNING"

    await eventually(running, message="Serve app RUNNING")
    assert (await http.get(health)).text == "success"

    await http.delete(f"/api/v1/namespaces/{NS}/pods/h", params={"gracePeriodSeconds": "0"})

    async def gone() -> bool:
        return (await http.get(f"{PROXY}/api/gcs_healthz")).status_code == 503

    await eventually(gone, message="no dashboard once the head is deleted")


async def test_k8s_job_submitter_completes_its_job(http: httpx.AsyncClient) -> None:
    await head_with_service(http, head_pod("h"))
    address = f"h-svc.{NS}.svc.cluster.local:8265"
    script = submit_script(
        kuberay_job("sleep 0.3; exit 1"), "k1", address, JobSubmissionMode.K8S_JOB, 0
    )
    container = {
        "name": "ray-job-submitter",
        "image": "rayproject/ray:2.60.0",
        "command": ["/bin/bash", "-ce", "--"],
        "args": [script],
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "k1"},
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }
    await create(http, f"/apis/batch/v1/namespaces/{NS}/jobs", job)

    async def complete() -> bool:
        status = (
            (await http.get(f"/apis/batch/v1/namespaces/{NS}/jobs/k1")).json().get("status", {})
        )
        return status.get("succeeded") == 1

    # `ray job logs --follow` exits 0 whatever the job's outcome, so the Job succeeds...
    await eventually(complete, within=20, message="the submitter Job to complete")
    info = (await http.get(f"{PROXY}/api/jobs/k1")).json()
    # ...and the Ray job itself failed, with the metadata and runtime env of the RayJob.
    assert (info["status"], info["driver_exit_code"]) == ("FAILED", 1)
    assert (info["metadata"], info["runtime_env"]) == ({"team": "a"}, {"env_vars": {"A": "1"}})


async def test_sidecar_submitter_exits_with_the_job_and_token_auth(http: httpx.AsyncClient) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "tok"},
        "stringData": {"auth_token": "t0ken"},
    }
    await create(http, f"/api/v1/namespaces/{NS}/secrets", secret)
    token = {
        "name": "RAY_AUTH_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "tok", "key": "auth_token"}},
    }
    env = [{"name": "RAY_AUTH_MODE", "value": "token"}, token]
    script = submit_script(
        kuberay_job("sleep 0.3; exit 2"), "c1", "", JobSubmissionMode.SIDECAR, 8265
    )
    sidecar = {
        "name": "ray-job-submitter",
        "image": "rayproject/ray:2.60.0",
        "command": ["/bin/bash", "-ce", "--"],
        "args": [script],
        "env": env,
    }
    await head_with_service(http, head_pod("h", sidecar, env=env))

    async def sidecar_exit() -> int | None:
        pod = (await http.get(f"/api/v1/namespaces/{NS}/pods/h")).json()
        for status in pod.get("status", {}).get("containerStatuses", []):
            if status["name"] == "ray-job-submitter" and "terminated" in status["state"]:
                return int(status["state"]["terminated"]["exitCode"])
        return None

    assert await eventually(sidecar_exit, within=20, message="the sidecar to exit") == 1
    # The exited sidecar leaves the head not Ready (as on Kubernetes): no Service endpoint.
    assert (await http.get(f"{PROXY}/api/jobs/")).status_code == 503
    pod_proxy = f"/api/v1/namespaces/{NS}/pods/h:8265/proxy"
    assert (await http.get(f"{pod_proxy}/api/jobs/")).status_code == 401
    answer = await http.get(
        f"{pod_proxy}/api/jobs/c1", headers={"x-ray-authorization": "Bearer t0ken"}
    )
    assert answer.json()["status"] == "FAILED"


async def test_a_head_waits_for_its_token_secret_then_wants_that_token(
    http: httpx.AsyncClient,
) -> None:
    """As a kubelet and Ray: no Secret, no container; the token it then holds is the key."""
    token = {
        "name": "RAY_AUTH_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "later", "key": "auth_token"}},
    }
    await create(
        http,
        f"/api/v1/namespaces/{NS}/pods",
        head_pod("h", env=[{"name": "RAY_AUTH_MODE", "value": "token"}, token]),
    )

    async def config_error() -> bool:
        pod = (await http.get(f"/api/v1/namespaces/{NS}/pods/h")).json()
        states = [s["state"] for s in pod.get("status", {}).get("containerStatuses", [])]
        reasons = [st["waiting"].get("reason") for st in states if "waiting" in st]
        return reasons == ["CreateContainerConfigError"]

    await eventually(config_error, within=20, message="CreateContainerConfigError")
    pod = (await http.get(f"/api/v1/namespaces/{NS}/pods/h")).json()
    assert pod["status"]["phase"] == "Pending"
    assert "later" in pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"]

    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "later"},
        "stringData": {"auth_token": "from-the-secret"},
    }
    await create(http, f"/api/v1/namespaces/{NS}/secrets", secret)

    async def running() -> bool:
        pod = (await http.get(f"/api/v1/namespaces/{NS}/pods/h")).json()
        return pod["status"].get("phase") == "Running"

    await eventually(running, within=20, message="the head Running once its Secret exists")
    pod_proxy = f"/api/v1/namespaces/{NS}/pods/h:8265/proxy/api/jobs/"

    async def answers(token: str) -> int:
        auth = {"x-ray-authorization": f"Bearer {token}"}
        return (await http.get(pod_proxy, headers=auth)).status_code

    async def let_in() -> bool:
        return await answers("from-the-secret") == 200

    await eventually(let_in, within=20, message="the dashboard letting the Secret's token in")
    assert await answers("any-other-token") == 403  # as Ray answers a wrong token


async def test_token_auth_without_a_token_is_a_head_that_does_not_start(
    http: httpx.AsyncClient,
) -> None:
    """Ray refuses `RAY_AUTH_MODE=token` without `RAY_AUTH_TOKEN`; no dashboard is invented."""
    env = [{"name": "RAY_AUTH_MODE", "value": "token"}]
    await create(http, f"/api/v1/namespaces/{NS}/pods", head_pod("h", env=env))

    async def terminated() -> dict[str, Any] | None:
        pod = (await http.get(f"/api/v1/namespaces/{NS}/pods/h")).json()
        states = [s["state"] for s in pod.get("status", {}).get("containerStatuses", [])]
        return next((st["terminated"] for st in states if "terminated" in st), None)

    ended = await eventually(terminated, within=20, message="the head container ended")
    assert ended["exitCode"] == 1 and "RAY_AUTH_TOKEN" in ended["message"]
    pod_proxy = f"/api/v1/namespaces/{NS}/pods/h:8265/proxy/api/jobs/"
    assert (await http.get(pod_proxy)).status_code != 200


def test_kubernetes_token_auth_needs_no_token_variable() -> None:
    """With RAY_ENABLE_K8S_TOKEN_AUTH=true Ray authenticates with the pod's projected
    ServiceAccount token (KubeRay's `ray-cluster.kubernetes.auth*.yaml`)."""
    token_mode = {"name": "RAY_AUTH_MODE", "value": "token"}
    k8s = {"name": "RAY_ENABLE_K8S_TOKEN_AUTH", "value": "true"}
    for env, refused in (([token_mode], True), ([token_mode, k8s], False)):
        pod = head_pod("h", env=env)
        container = pod["spec"]["containers"][0]
        assert (auth_error(container, pod, lambda _ns, _name: None) is not None) is refused


async def test_a_head_and_its_sidecar_outlive_a_devcluster_restart(tmp_path: Path) -> None:
    script = submit_script(kuberay_job("sleep 3"), "r1", "", JobSubmissionMode.SIDECAR, 8265)
    sidecar = {"name": "ray-job-submitter", "image": "rayproject/ray:2.60.0", "args": [script]}
    pod_proxy = f"/api/v1/namespaces/{NS}/pods/h:8265/proxy"
    first = DevCluster(tmp_path, runtime="simulated", ready_delay=0.1)
    await first.start()
    try:
        async with httpx.AsyncClient(base_url=first.url, timeout=10) as http:
            await head_with_service(http, head_pod("h", sidecar))

            async def running() -> bool:
                answer = await http.get(f"{pod_proxy}/api/jobs/r1")
                return answer.status_code == 200 and answer.json()["status"] == "RUNNING"

            await eventually(running, message="job r1 RUNNING")
    finally:
        await first.stop()

    second = DevCluster(tmp_path, runtime="simulated", ready_delay=0.1)
    await second.start()
    try:
        async with httpx.AsyncClient(base_url=second.url, timeout=10) as http:

            async def sidecar_exit() -> str | None:  # a string: exit code 0 is falsy
                pod = (await http.get(f"/api/v1/namespaces/{NS}/pods/h")).json()
                for status in pod.get("status", {}).get("containerStatuses", []):
                    if status["name"] == "ray-job-submitter" and "terminated" in status["state"]:
                        return str(status["state"]["terminated"]["exitCode"])
                return None

            # The script is followed to its end, not run again: a second `ray job submit`
            # would have been refused as a duplicate and exited 1.
            assert await eventually(sidecar_exit, within=20, message="the sidecar to exit") == "0"
            jobs = (await http.get(f"{pod_proxy}/api/jobs/")).json()
            assert [(j["submission_id"], j["status"]) for j in jobs] == [("r1", "SUCCEEDED")]
    finally:
        await second.stop()


async def test_the_redis_cleanup_job_succeeds(http: httpx.AsyncClient) -> None:
    """Simulated Ray keeps nothing in Redis: a fault-tolerant cluster's cleanup Job completes
    (without that it would run until its deadline and hold the cluster's finalizer)."""
    data = instance_dict()
    data["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    job = build_redis_cleanup_job(cluster(data))
    job["metadata"].pop("ownerReferences")
    job["metadata"]["namespace"] = NS
    await create(http, f"/apis/batch/v1/namespaces/{NS}/jobs", job)
    path = f"/apis/batch/v1/namespaces/{NS}/jobs/{job['metadata']['name']}"

    async def complete() -> bool:
        return (await http.get(path)).json().get("status", {}).get("succeeded") == 1

    await eventually(complete, within=20, message="the cleanup Job to complete")
