"""What the RayCluster feature tests do to a running cluster, through the API server only.

Ray jobs go to the head's dashboard through the API server's service proxy (no port-forward,
no `kubectl exec`), and Redis is read by a short-lived pod running `redis-cli` whose output
comes back through `kubectl logs`: both the way a user without node access would do it.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from typing import Any

from tests.e2e.conftest import LocalStack
from tests.eventually import eventually

REDIS_SECRET = "redis-password-secret"
REDIS_ADDRESS = "redis.default.svc.cluster.local:6379"
RAY_JOB_STATUSES = ("PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED")


def dashboard_path(cluster: str, tail: str) -> str:
    """The proxy path of a dashboard API under the cluster's head Service."""
    return f"/api/v1/namespaces/default/services/{cluster}-head-svc:dashboard/proxy/{tail}"


async def submit_job(
    stack: LocalStack, cluster: str, submission_id: str, script: str, within: float = 120
) -> None:
    """Submit `python -c script` as a Ray job with a fixed submission id.

    A just-restarted head may be Ready before its dashboard listens, so the submission is
    retried; the fixed id makes a retry after a lost answer harmless (Ray refuses the copy).
    """
    body = {"entrypoint": f"python -c {shlex.quote(script)}", "submission_id": submission_id}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
        json.dump(body, file)
        file.flush()
        path = dashboard_path(cluster, "api/jobs/")

        async def submitted() -> bool:
            await stack.kubectl("create", "--raw", path, "-f", file.name, check=False)
            return bool(await job_status(stack, cluster, submission_id))

        await eventually(submitted, within=within, message=f"job {submission_id} submitted")


async def job_status(stack: LocalStack, cluster: str, submission_id: str) -> str:
    """The job's status, or "" while the dashboard is unreachable."""
    raw = await stack.kubectl(
        "get", "--raw", dashboard_path(cluster, f"api/jobs/{submission_id}"), check=False
    )
    try:
        status = str(json.loads(raw).get("status", ""))
    except (ValueError, AttributeError):
        return ""
    return status if status in RAY_JOB_STATUSES else ""  # not a Kubernetes Status "Failure"


async def job_logs(stack: LocalStack, cluster: str, submission_id: str) -> str:
    """The job's driver output."""
    path = dashboard_path(cluster, f"api/jobs/{submission_id}/logs")
    return str(json.loads(await stack.kubectl("get", "--raw", path)).get("logs", ""))


async def run_job(
    stack: LocalStack, cluster: str, submission_id: str, script: str, within: float = 120
) -> str:
    """Submit a job, wait until it succeeds (failing fast if it fails), return its output."""
    await submit_job(stack, cluster, submission_id, script, within)

    async def finished() -> str | None:
        status = await job_status(stack, cluster, submission_id)
        return status if status in ("SUCCEEDED", "FAILED", "STOPPED") else None

    status = await eventually(finished, within=within, message=f"job {submission_id} to end")
    logs = await job_logs(stack, cluster, submission_id)
    assert status == "SUCCEEDED", logs
    return logs


def redis_manifests(password: str) -> list[dict[str, Any]]:
    """A password Secret and a one-replica Redis (image `redis:7`, Debian's redis-server)."""
    labels = {"app": "redis"}
    password_env = {
        "name": "REDIS_PASSWORD",
        "valueFrom": {"secretKeyRef": {"name": REDIS_SECRET, "key": "password"}},
    }
    container = {
        "name": "redis",
        "image": "redis:7",
        "command": ["redis-server"],
        "args": ["--requirepass", "$(REDIS_PASSWORD)", "--save", "", "--appendonly", "no"],
        "env": [password_env],
        "ports": [{"containerPort": 6379, "name": "redis"}],
        "readinessProbe": {"tcpSocket": {"port": 6379}, "periodSeconds": 1},
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": REDIS_SECRET},
            "stringData": {"password": password},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "redis", "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "redis"},
            "spec": {"selector": labels, "ports": [{"port": 6379, "targetPort": 6379}]},
        },
    ]


async def apply(stack: LocalStack, *manifests: dict[str, Any]) -> None:
    """`kubectl apply` a list of objects."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
        json.dump({"apiVersion": "v1", "kind": "List", "items": list(manifests)}, file)
        file.flush()
        await stack.kubectl("apply", "-f", file.name)


async def redis_keys(stack: LocalStack, run: str) -> list[str]:
    """Every key in the Redis, listed by a pod running `redis-cli` (named after `run`)."""
    host = REDIS_ADDRESS.split(":")[0]
    password_env = {
        "name": "REDISCLI_AUTH",  # redis-cli reads the password from here, not from argv
        "valueFrom": {"secretKeyRef": {"name": REDIS_SECRET, "key": "password"}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"redis-keys-{run}"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "cli",
                    "image": "redis:7",
                    "command": ["redis-cli", "-h", host, "--scan"],
                    "env": [password_env],
                }
            ],
        },
    }
    await apply(stack, pod)

    async def done() -> bool:
        raw = await stack.kubectl("get", "pod", f"redis-keys-{run}", "-o", "json")
        return bool(json.loads(raw).get("status", {}).get("phase") == "Succeeded")

    await eventually(done, within=60, message=f"redis-cli pod {run} to succeed")
    return (await stack.kubectl("logs", f"redis-keys-{run}")).split()
