"""KubeRay's metrics: the transitions that set the duration gauges, the exposition text, and
the duration series of a status write against devcluster (real HTTP, real API semantics),
forgotten once the worker's copy of their kind sees the CR go.

The state gauges the bridge keeps are in `tests/bridge/test_state_gauges.py`."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.builders import DEFAULT_OPTIONS
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.informer import Informer
from activities.kuberay_metrics import (
    KubeRayMetrics,
    Sample,
    cluster_provisioned_duration,
    job_execution_duration,
    render,
)
from activities.rayjob import contract
from activities.rayjob.kube_effects import JobActivities
from crds.constants import LABEL_CLUSTER
from crds.enums import JobDeploymentStatus
from crds.rayjob import RayJobStatus
from crds.refs import ObjectRef
from tests.activities.counting import Calls
from tests.activities.kube.test_informer import QuietApi, running
from tests.eventually import eventually
from tests.exposition import series

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
JOB = {"entrypoint": "python x.py", "rayClusterSpec": {"headGroupSpec": HEAD}}


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


async def test_the_status_write_sets_the_duration_until_the_rayjob_is_gone(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    metrics = KubeRayMetrics()
    acts = JobActivities(client, DEFAULT_OPTIONS, metrics)
    started = datetime.now(UTC) - timedelta(seconds=30)
    job = await create(
        client, kube.RAYJOBS, "RayJob", JOB, status={"jobDeploymentStatus": "Running"}
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
    rayjobs = Informer(client, kube.RAYJOBS, LABEL_CLUSTER, "")
    async with running(rayjobs):
        await eventually(lambda: rayjobs.whole, message="the copy of the RayJobs")
        requests = Calls(client, "list_versioned", monkeypatch)
        found = series(metrics.collect(rayjobs=rayjobs))
        assert requests.resources == []  # the copy tells, not a list per scrape
        assert 29 <= found[key] <= 60
        assert len([k for k in found if k.startswith("kuberay_job_execution")]) == 1

        await client.delete(kube.RAYJOBS, "default", meta["name"])
        await eventually(
            lambda: "kuberay_job" not in metrics.collect(rayjobs=rayjobs),
            message="the deleted RayJob's series to go",
        )


async def test_a_cr_recreated_under_its_name_loses_the_old_ones_series(client: KubeClient) -> None:
    metrics = KubeRayMetrics()
    old = await create(client, kube.RAYCLUSTERS, "RayCluster", {"headGroupSpec": HEAD})
    metrics.cluster_status_written(old, {"conditions": [PROVISIONED]})
    name = old["metadata"]["name"]
    clusters = Informer(client, kube.RAYCLUSTERS, LABEL_CLUSTER, "")
    async with running(clusters):
        await eventually(lambda: clusters.whole, message="the copy of the RayClusters")
        assert old["metadata"]["uid"] in metrics.collect(clusters=clusters)
        await client.delete(kube.RAYCLUSTERS, "default", name)
        body = {key: old[key] for key in ("apiVersion", "kind", "spec")}
        new = await client.create(kube.RAYCLUSTERS, "default", body | {"metadata": {"name": name}})
        await eventually(
            lambda: clusters.get("default", name) == new, message="the new cluster copied"
        )
        assert metrics.collect(clusters=clusters) == ""


async def test_a_copy_that_cannot_tell_keeps_the_series() -> None:
    """No copy, one not listed yet, or one behind the version the series was recorded at."""
    metrics = KubeRayMetrics()
    for name, version in (("seen-go", "2"), ("not-seen-yet", "5")):
        meta = {"name": name, "namespace": "a", "uid": name, "resourceVersion": version}
        metrics.cluster_status_written(
            {"metadata": meta | {"creationTimestamp": START}}, {"conditions": [PROVISIONED]}, NOW
        )
    metrics.collect()
    api = QuietApi([], {"a": "3"})  # lists no RayCluster at version 3, then hears nothing
    clusters = Informer(api, kube.RAYCLUSTERS, LABEL_CLUSTER, "", namespaces=["a"])  # type: ignore[arg-type]
    metrics.collect(clusters=clusters)
    assert len(metrics.duration_samples()) == 2
    async with running(clusters):
        await eventually(lambda: clusters.whole, message="the copy listed")
        text = metrics.collect(clusters=clusters)
    assert 'name="not-seen-yet"' in text and "seen-go" not in text
