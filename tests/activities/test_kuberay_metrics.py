"""KubeRay's metrics: the transitions that set the duration gauges, the exposition text, and
the duration series of a status write against devcluster (real HTTP, real API semantics).

The state gauges the bridge keeps are in `tests/bridge/test_state_gauges.py`."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from temporalio.testing import ActivityEnvironment

from activities.builders import DEFAULT_OPTIONS
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kuberay_metrics import (
    KubeRayMetrics,
    Sample,
    cluster_provisioned_duration,
    job_execution_duration,
    render,
)
from activities.rayjob import contract
from activities.rayjob.kube_effects import JobActivities
from crds.enums import JobDeploymentStatus
from crds.rayjob import RayJobStatus
from crds.refs import ObjectRef

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
START = "2026-01-01T11:59:00Z"
PROVISIONED = {"type": "RayClusterProvisioned", "status": "True"}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param("Running", "Complete", ("Complete", 0, 60.0), id="complete"),
        pytest.param("Running", "Failed", ("Failed", 0, 60.0), id="failed"),
        pytest.param("Running", "Retrying", ("Retrying", 0, 60.0), id="retrying"),
        pytest.param("Initializing", "Complete", ("Complete", 0, 60.0), id="from-initializing"),
        pytest.param("Complete", "Complete", None, id="already-terminal"),
        pytest.param("Failed", "Retrying", None, id="terminal-to-retrying"),
        pytest.param("Initializing", "Running", None, id="not-terminal"),
        pytest.param("Running", "Suspending", None, id="suspending"),
    ],
)
def test_job_execution_duration_follows_kuberays_transitions(
    old: str, new: str, expected: tuple[str, int, float] | None
) -> None:
    before = {"jobDeploymentStatus": old}
    after = {"jobDeploymentStatus": new, "startTime": START}
    assert job_execution_duration(before, after, NOW) == expected


def test_job_retry_count_is_the_old_failed_count() -> None:
    before = {"jobDeploymentStatus": "Running", "failed": 2}
    after = {"jobDeploymentStatus": "Failed", "startTime": START, "failed": 3}
    assert job_execution_duration(before, after, NOW) == ("Failed", 2, 60.0)


def test_cluster_provisioned_duration_only_on_the_false_to_true_edge() -> None:
    created = "2026-01-01T11:58:30Z"
    unset: dict[str, Any] = {}
    not_yet = {"conditions": [{"type": "RayClusterProvisioned", "status": "False"}]}
    done = {"conditions": [PROVISIONED]}
    assert cluster_provisioned_duration(unset, done, created, NOW) == 90.0
    assert cluster_provisioned_duration(not_yet, done, created, NOW) == 90.0
    assert cluster_provisioned_duration(None, done, created, NOW) == 90.0
    assert cluster_provisioned_duration(done, done, created, NOW) is None
    assert cluster_provisioned_duration(unset, not_yet, created, NOW) is None


def test_exposition_text() -> None:
    text = render(
        [
            Sample("kuberay_job_info", (("name", "a"), ("namespace", "n"), ("uid", "u")), 1),
            Sample("kuberay_job_info", (("name", 'q"\\'), ("namespace", "n"), ("uid", "v")), 1),
            Sample("kuberay_cluster_provisioned_duration_seconds", (("name", "c"),), 1.5),
        ]
    )
    assert text == (
        "# HELP kuberay_job_info Metadata information about RayJob custom resources\n"
        "# TYPE kuberay_job_info gauge\n"
        'kuberay_job_info{name="a",namespace="n",uid="u"} 1\n'
        'kuberay_job_info{name="q\\"\\\\",namespace="n",uid="v"} 1\n'
        "# HELP kuberay_cluster_provisioned_duration_seconds The time, in seconds, when a "
        "RayCluster's `RayClusterProvisioned` status transitions from false (or unset) to true\n"
        "# TYPE kuberay_cluster_provisioned_duration_seconds gauge\n"
        'kuberay_cluster_provisioned_duration_seconds{name="c"} 1.5\n'
    )


# --- against devcluster ----------------------------------------------------------------------


HEAD = {
    "rayStartParams": {},
    "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}},
}


async def create(
    client: KubeClient,
    resource: kube.Resource,
    kind: str,
    spec: dict[str, Any],
    status: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    name = f"{kind.lower()}-{uuid.uuid4().hex[:5]}"
    body = {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": spec,
    }
    created = await client.create(resource, "default", body)
    if status is not None:
        await client.patch(resource, "default", name, {"status": status}, sub="status")
    return created


def series(text: str) -> dict[str, float]:
    """`name{labels}` -> value for every sample line."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            found[key] = float(value)
    return found


async def test_the_status_write_sets_the_duration_until_the_rayjob_is_gone(
    client: KubeClient,
) -> None:
    metrics = KubeRayMetrics()
    acts = JobActivities(client, DEFAULT_OPTIONS, metrics)
    started = datetime.now(UTC) - timedelta(seconds=30)
    job = await create(
        client,
        kube.RAYJOBS,
        "RayJob",
        {"entrypoint": "python x.py", "rayClusterSpec": {"headGroupSpec": HEAD}},
        status={"jobDeploymentStatus": "Running"},
    )
    meta = job["metadata"]
    ref = ObjectRef(kind="RayJob", namespace="default", name=meta["name"], uid=meta["uid"])
    done = RayJobStatus(job_deployment_status=JobDeploymentStatus.COMPLETE, start_time=started)
    env = ActivityEnvironment()
    await env.run(acts.write_status, contract.WriteJobStatusInput(ref=ref, status=done))
    # The retried write sees no transition and leaves the observation alone.
    await env.run(acts.write_status, contract.WriteJobStatusInput(ref=ref, status=done))

    key = (
        f'kuberay_job_execution_duration_seconds{{name="{meta["name"]}",namespace="default",'
        f'uid="{meta["uid"]}",job_deployment_status="Complete",retry_count="0"}}'
    )
    found = series(await metrics.collect(client))
    assert 29 <= found[key] <= 60
    assert len([k for k in found if k.startswith("kuberay_job_execution")]) == 1

    await client.delete(kube.RAYJOBS, "default", meta["name"])
    assert "kuberay_job" not in await metrics.collect(client)


async def test_a_namespaced_worker_lists_only_its_namespaces() -> None:
    """A namespaced install may list nowhere else: the gone-CR check stays inside its own."""
    listed: list[tuple[str, str | None]] = []

    class Recording:
        async def list_all(self, resource: kube.Resource, namespace: str | None) -> list[Any]:
            listed.append((resource.plural, namespace))
            return []

    metrics = KubeRayMetrics()
    meta = {"name": "c", "namespace": "a", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z"}
    provisioned = {"conditions": [{"type": "RayClusterProvisioned", "status": "True"}]}
    metrics.cluster_status_written({"metadata": meta}, provisioned)
    assert metrics.duration_samples()
    await metrics.collect(cast(KubeClient, Recording()), ["a", "b"])
    assert sorted(listed) == [("rayclusters", "a"), ("rayclusters", "b")]
    assert metrics.duration_samples() == []  # listed in both, found in neither: gone
