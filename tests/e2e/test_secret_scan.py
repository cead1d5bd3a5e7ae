"""No secret value reaches a workflow history, a query, an Event, a status or a log line.

The whole local stack on devcluster's simulated runtime (pods turn Ready without processes; each
head's simulated Ray dashboard listens on the `dashboard-port` its rayStartParams give, which
here is not the port its Service targets, so no dashboard answers): a RayCluster with GCS fault
tolerance whose Redis password comes from a Secret, one with the password written inline in the
CR, a legacy one (`ray.io/ft-enabled`) with the password inline in the head's and the worker's
rayStartParams and `REDIS_PASSWORD` env, two RayJobs (HTTPMode, K8sJobMode) with a token written
inline in a worker's env and in the submitter's, and a RayService whose clusters run with Ray
token authentication and carry a token inline in the head's env. The activities read the Ray
token from its Secret for every dashboard call, and those calls fail here, which is the path
where a token most easily slips into an error message. Then every workflow history (all events,
payloads as stored, which without a key are readable JSON), every pending activity's last
failure, every `progress` query, the Events, the CR statuses, the stack's log (worker, bridge
and devcluster at the warning level `dev` logs at, activity failures with their tracebacks) and
the Temporal server's log are searched for the secret values, plain and base64. Checked to fail
when the redaction of inline secrets is off.
"""

from __future__ import annotations

import base64
import json
import secrets
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus

from tests.e2e.conftest import LocalStack
from tests.eventually import eventually
from tests.history_scan import raw_history
from workflows import messages

pytestmark = pytest.mark.timeout(300)

RAY = "rayproject/ray:2.60.0"
CLUSTERS = ("ft-by-ref", "ft-inline", "ft-legacy")
CREATED_JOB = "reason=CreatedRedisCleanupJob"
AUTH = {"mode": "token", "secretName": "ray-auth"}


def env(name: str, value: str) -> list[dict[str, str]]:
    return [{"name": name, "value": value}]


def cluster_spec(
    params: dict[str, str] | None = None,
    head_env: list[dict[str, str]] | None = None,
    worker_env: list[dict[str, str]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    def group(role: str, env: list[dict[str, str]] | None) -> dict[str, Any]:
        container = {"name": f"ray-{role}", "image": RAY, "resources": {"limits": {"cpu": "1"}}}
        if env:
            container["env"] = env
        # Off the Service's port: every dashboard call fails (see the module docstring).
        start = {"dashboard-port": "18265"} if role == "head" else {}
        start |= params or {}
        return {"rayStartParams": start, "template": {"spec": {"containers": [container]}}}

    worker = {"groupName": "small", "replicas": 1, "minReplicas": 0, "maxReplicas": 2}
    return {
        "rayVersion": "2.60.0",
        "headGroupSpec": group("head", head_env),
        "workerGroupSpecs": [{**worker, **group("worker", worker_env)}],
        **extra,
    }


def manifests(
    password: str, inline_password: str, token: str, legacy: str, env_token: str
) -> list[dict[str, Any]]:
    def secret(name: str, data: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name},
            "stringData": data,
        }

    def ray(kind: str, name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
        metadata = {"name": name, **meta}
        return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": metadata, "spec": spec}

    by_ref = {"valueFrom": {"secretKeyRef": {"name": "redis-password", "key": "password"}}}
    entrypoint = "python -c 'print(1)'"
    serve = "applications:\n  - name: app\n    import_path: app:app\n    route_prefix: /\n"
    submitter = {"name": "ray-job-submitter", "image": RAY, "env": env("GIT_TOKEN", env_token)}
    return [
        secret("redis-password", {"password": password}),
        secret("ray-auth", {"auth_token": token}),
        ray(
            "RayCluster",
            "ft-by-ref",
            cluster_spec(
                gcsFaultToleranceOptions={"redisAddress": "redis:6379", "redisPassword": by_ref},
                authOptions=AUTH,
            ),
        ),
        ray(
            "RayCluster",
            "ft-inline",
            cluster_spec(
                gcsFaultToleranceOptions={
                    "redisAddress": "redis:6379",
                    "redisPassword": {"value": inline_password},
                }
            ),
        ),
        ray(
            "RayCluster",
            "ft-legacy",
            cluster_spec(
                params={"redis-password": legacy},
                head_env=env("RAY_REDIS_ADDRESS", "redis:6379") + env("REDIS_PASSWORD", legacy),
                worker_env=env("REDIS_PASSWORD", legacy),
            ),
            annotations={"ray.io/ft-enabled": "true"},
        ),
        ray(
            "RayJob",
            "job-http",
            {
                "submissionMode": "HTTPMode",
                "entrypoint": entrypoint,
                "rayClusterSpec": cluster_spec(
                    worker_env=env("HF_TOKEN", env_token), authOptions=AUTH
                ),
            },
        ),
        ray(
            "RayJob",
            "job-k8s",
            {
                "entrypoint": entrypoint,
                "rayClusterSpec": cluster_spec(authOptions=AUTH),
                "submitterPodTemplate": {"spec": {"containers": [submitter]}},
            },
        ),
        ray(
            "RayService",
            "svc",
            {
                "serveConfigV2": serve,
                "rayClusterConfig": cluster_spec(
                    head_env=env("OPENAI_API_KEY", env_token), authOptions=AUTH
                ),
            },
        ),
    ]


def forms(value: str) -> list[bytes]:
    """The value as it could leak: plain, or base64 as a Secret's `data` carries it."""
    return [value.encode(), base64.b64encode(value.encode())]


async def kubectl_json(stack: LocalStack, *args: str) -> dict[str, Any]:
    return dict(json.loads(await stack.kubectl(*args, "-o", "json")))


async def pending_failures(stack: LocalStack, workflow_id: str) -> str:
    """The last failure messages of the workflow's pending activities."""
    description = await stack.client.get_workflow_handle(workflow_id).describe()
    pending = description.raw_description.pending_activities
    return " ".join(activity.last_failure.message for activity in pending)


async def workflows(stack: LocalStack) -> dict[str, list[tuple[str, WorkflowExecutionStatus]]]:
    """Every execution by workflow id: (run id, status)."""
    found: dict[str, list[tuple[str, WorkflowExecutionStatus]]] = {}
    async for execution in stack.client.list_workflows(""):
        status = execution.status or WorkflowExecutionStatus.RUNNING
        found.setdefault(execution.id, []).append((execution.run_id, status))
    return found


async def exercise(stack: LocalStack, tmp_path: Path, secrets: dict[str, str]) -> None:
    """Apply everything, let each dashboard path fail at least once, then delete."""
    path = tmp_path / "manifests.json"
    items = manifests(**secrets)
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    await stack.kubectl("apply", "-f", str(path))

    async def status(kind: str, name: str) -> dict[str, Any]:
        return dict((await kubectl_json(stack, "get", kind, name)).get("status") or {})

    async def cluster_ready(name: str) -> bool:
        return (await status("raycluster", name)).get("state") == "ready"

    async def job_checks_failing(name: str) -> bool:
        # No dashboard answers on the simulated runtime: the job status checks fail.
        return "jobStatusCheckFailureStartTime" in await status("rayjob", name)

    for name in CLUSTERS:
        await eventually(partial(cluster_ready, name), within=90, message=f"{name} ready")
    for name in ("job-http", "job-k8s"):
        await eventually(partial(job_checks_failing, name), within=90, message=f"{name} failing")
    # The password reaches the pods only as a reference to its Secret.
    pods = await kubectl_json(stack, "get", "pods", "-l", "ray.io/cluster=ft-by-ref")
    env = [e for pod in pods["items"] for e in pod["spec"]["containers"][0].get("env", [])]
    assert {"name": "redis-password", "key": "password"} in [
        e.get("valueFrom", {}).get("secretKeyRef") for e in env
    ]

    async def serve_failed() -> bool:
        upgrades = [wf for wf in await workflows(stack) if wf.startswith("rayservice/default/svc/")]
        upgrades = [wf for wf in upgrades if "/upgrade/" in wf]
        if not upgrades:
            return False
        seen = await raw_history(stack.client, upgrades[0])
        seen += (await pending_failures(stack, upgrades[0])).encode()
        return b"DashboardUnavailable" in seen

    await eventually(serve_failed, within=90, message="the serve config PUT failing")

    # Deletion paths too: the Redis cleanup Jobs (password by reference and inline), the
    # RayJobs' clean-up.
    for name in CLUSTERS:
        await stack.kubectl("delete", "raycluster", name, "--wait=false")
    for name in ("job-http", "job-k8s"):
        await stack.kubectl("delete", "rayjob", name, "--wait=false")

    async def cleanup_jobs_and_closed_rayjobs() -> bool:
        # The cleanup Jobs were created (simulated Ray's cleanup succeeds at once, so a Job
        # may be gone with its cluster by the time this looks: its Event stays).
        events = await kubectl_json(stack, "get", "events", "--field-selector", CREATED_JOB)
        created = {e["involvedObject"]["name"] for e in events["items"]}
        closed = [
            runs
            for wf, runs in (await workflows(stack)).items()
            if wf.startswith("rayjob/")
            and all(s != WorkflowExecutionStatus.RUNNING for _, s in runs)
        ]
        return created >= set(CLUSTERS) and len(closed) == 2

    await eventually(cleanup_jobs_and_closed_rayjobs, within=90, message="deletions under way")


async def collect(stack: LocalStack) -> dict[str, bytes]:
    """Everything a person or a log pipeline could read, by where it comes from."""
    found: dict[str, bytes] = {}
    for workflow_id, runs in (await workflows(stack)).items():
        for run_id, status in runs:
            found[f"history {workflow_id} {run_id}"] = await raw_history(
                stack.client, workflow_id, run_id
            )
            handle = stack.client.get_workflow_handle(workflow_id, run_id=run_id)
            described = (await handle.describe()).raw_description
            found[f"describe {workflow_id} {run_id}"] = described.SerializeToString()
            if status == WorkflowExecutionStatus.RUNNING:
                progress = await handle.query(messages.PROGRESS)
                found[f"query {workflow_id}"] = json.dumps(progress).encode()
    events = await kubectl_json(stack, "get", "events", "-A")
    found["Events"] = json.dumps(events).encode()
    for kind in ("rayclusters", "rayjobs", "rayservices"):
        objects = (await kubectl_json(stack, "get", kind, "-A"))["items"]
        found[f"{kind} status"] = json.dumps([o.get("status") for o in objects]).encode()
    found["stack log (worker, bridge, devcluster)"] = stack.log.read_bytes()
    found["Temporal server log"] = (stack.state_dir / "temporal.log").read_bytes()
    return found


async def test_no_secret_value_in_histories_queries_events_statuses_or_logs(
    simulated_stack: LocalStack, tmp_path: Path
) -> None:
    stack = simulated_stack
    values = {
        label: f"s3cret-{secrets.token_hex(12)}"
        for label in ("password", "inline_password", "token", "legacy", "env_token")
    }
    await exercise(stack, tmp_path, values)

    found = await collect(stack)

    leaks = [
        f"{label} in {where}"
        for where, data in found.items()
        for label, value in values.items()
        if any(form in data for form in forms(value))
    ]
    assert not leaks, leaks
    # The scan saw the paths it is about: the redacted inline password, dashboard calls
    # made with the token and failing, every CR's workflows (and the upgrade child).
    everything = b"".join(found.values())
    assert b"<redacted>" in everything
    assert b"DashboardUnavailable" in everything
    assert sum(key.startswith("history ") for key in found) >= 9, sorted(found)
