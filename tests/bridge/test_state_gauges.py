"""KubeRay's state gauges, kept from the bridge's watch events and rendered from memory.

The pure part follows events by hand; the rest runs a bridge against devcluster, where the
series follow real watch events (status writes included) and a scrape reaches no API.
"""

from __future__ import annotations

import gc
import tracemalloc
import uuid
from typing import Any

import httpx
import pytest

from activities.kube import client as kube
from activities.kube.client import JSON
from bridge.state_gauges import StateGauges
from bridge.targets import JOB, POD, RAYCLUSTER, RAYCRONJOB, RAYJOB, RAYSERVICE
from runtime.prometheus import Telemetry, serving_metrics
from runtime.settings import LOOPBACK
from tests.bridge.conftest import Stack
from tests.bridge.test_bridge import new_namespace, running_bridge
from tests.eventually import eventually
from tests.exposition import series

pytestmark = pytest.mark.timeout(120)

PROVISIONED = {"type": "RayClusterProvisioned", "status": "True"}
HEAD = {"rayStartParams": {}, "template": {"spec": {"containers": []}}}


def cr(name: str, status: Any = None, labels: dict[str, str] | None = None) -> JSON:
    meta = {"name": name, "namespace": "ns", "uid": f"u-{name}", "labels": labels or {}}
    return {"metadata": meta, "spec": {}, "status": status}


def ident(name: str, namespace: str = "ns", uid: str | None = None) -> str:
    return f'name="{name}",namespace="{namespace}",uid="{uid or f"u-{name}"}"'


def test_each_kind_has_kuberays_series() -> None:
    gauges = StateGauges()
    owned = {"ray.io/originated-from-crd": "RayJob"}
    gauges.observe(RAYCLUSTER, "ADDED", cr("c", {"conditions": [PROVISIONED]}, owned))
    gauges.observe(RAYJOB, "ADDED", cr("j", {"jobDeploymentStatus": "Running"}))
    ready = {"type": "Ready", "status": "True"}
    gauges.observe(RAYSERVICE, "ADDED", cr("s", {"conditions": [ready]}))
    assert series(gauges.text()) == {
        f'kuberay_cluster_info{{{ident("c")},owner_kind="RayJob"}}': 1,
        f'kuberay_cluster_condition_provisioned{{{ident("c")},condition="true"}}': 1,
        f"kuberay_job_info{{{ident('j')}}}": 1,
        f'kuberay_job_deployment_status{{{ident("j")},deployment_status="Running"}}': 1,
        f"kuberay_service_info{{{ident('s')}}}": 1,
        f'kuberay_service_condition_ready{{{ident("s")},condition="true"}}': 1,
        f'kuberay_service_condition_upgrade_in_progress{{{ident("s")},condition="false"}}': 1,
    }


def test_a_new_state_replaces_the_series_and_a_deletion_drops_them() -> None:
    gauges = StateGauges()
    gauges.observe(RAYJOB, "ADDED", cr("j", {"jobDeploymentStatus": "Running"}))
    gauges.observe(RAYCLUSTER, "ADDED", cr("c"))
    gauges.observe(RAYJOB, "MODIFIED", cr("j", {"jobDeploymentStatus": "Complete"}))
    # A vanished object comes as a DELETED skeleton: metadata only.
    gauges.observe(RAYCLUSTER, "DELETED", {"metadata": {"name": "c", "uid": "u-c"}})
    assert series(gauges.text()) == {
        f"kuberay_job_info{{{ident('j')}}}": 1,
        f'kuberay_job_deployment_status{{{ident("j")},deployment_status="Complete"}}': 1,
    }
    gauges.observe(RAYJOB, "DELETED", cr("j"))
    assert gauges.text() == "" and len(gauges) == 0


@pytest.mark.parametrize("target", [RAYCRONJOB, POD, JOB], ids=["raycronjob", "pod", "batch-job"])
def test_kinds_without_state_gauges_keep_nothing(target: Any) -> None:
    gauges = StateGauges()
    gauges.observe(target, "ADDED", cr("x", {"jobDeploymentStatus": "Running"}))
    assert len(gauges) == 0


@pytest.mark.parametrize(
    "status",
    [
        pytest.param("not-a-mapping", id="status-text"),
        pytest.param({"conditions": "Ready"}, id="conditions-text"),
        pytest.param({"conditions": ["Ready", None]}, id="condition-text"),
    ],
)
def test_a_status_of_any_shape_reads_as_no_condition(status: Any) -> None:
    gauges = StateGauges()
    gauges.observe(RAYCLUSTER, "ADDED", cr("c", status))
    assert f'kuberay_cluster_condition_provisioned{{{ident("c")},condition="false"}}' in (
        series(gauges.text())
    )


def test_memory_per_cr_is_a_few_hundred_bytes() -> None:
    """What is kept of a CR once its event is gone: a record, its name and uid."""
    count = 3_000
    gauges = StateGauges()
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(count):
            target = (RAYCLUSTER, RAYJOB, RAYSERVICE)[i % 3]
            obj = cr(f"cr-name-{i:06d}", {"jobDeploymentStatus": "Running"})
            obj["metadata"] |= {"uid": str(uuid.uuid4()), "namespace": f"team-{i % 10}"}
            gauges.observe(target, "ADDED", obj)
            del obj
        gc.collect()
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(gauges) == count
    assert kept / count < 400, f"{kept / count:.0f} bytes per CR"


# --- a bridge against devcluster -------------------------------------------------------------


async def create(stack: Stack, resource: kube.Resource, kind: str, namespace: str) -> JSON:
    spec = {
        "RayCluster": {"headGroupSpec": HEAD},
        "RayJob": {"entrypoint": "python x.py", "rayClusterSpec": {"headGroupSpec": HEAD}},
        "RayService": {"rayClusterConfig": {"headGroupSpec": HEAD}},
    }[kind]
    body = {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "metadata": {"name": f"{kind.lower()}-{uuid.uuid4().hex[:5]}", "namespace": namespace},
        "spec": spec,
    }
    return await stack.kube.create(resource, namespace, body)


def of(obj: JSON) -> str:
    meta = obj["metadata"]
    return ident(meta["name"], meta["namespace"], meta["uid"])


async def test_the_series_follow_watch_events_and_a_scrape_reaches_no_api(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace = await new_namespace(stack)
    job = await create(stack, kube.RAYJOBS, "RayJob", namespace)
    async with running_bridge(stack, namespace) as bridge:
        telemetry = Telemetry(runtime=None, sdk_address=None, kuberay=None)
        async with (
            serving_metrics(0, telemetry, [bridge.gauges.text], address=LOOPBACK) as server,
            httpx.AsyncClient() as http,
        ):
            assert server is not None

            async def scrape() -> dict[str, float]:
                response = await http.get(f"http://127.0.0.1:{server.port}/metrics")
                response.raise_for_status()
                return series(response.text)

            async def showing(wanted: str) -> dict[str, float] | None:
                found = await scrape()
                return found if wanted in found else None

            job_status = f"kuberay_job_deployment_status{{{of(job)},deployment_status="
            await eventually(lambda: showing(f'{job_status}""}}'), message="the listed job")

            # A status write is a watch event like any other.
            name = job["metadata"]["name"]
            patch = {"status": {"jobDeploymentStatus": "Running"}}
            await stack.kube.patch(kube.RAYJOBS, namespace, name, patch, sub="status")
            await eventually(lambda: showing(f'{job_status}"Running"}}'), message="Running")
            cluster = await create(stack, kube.RAYCLUSTERS, "RayCluster", namespace)
            wanted = f'kuberay_cluster_info{{{of(cluster)},owner_kind="None"}}'
            found = await eventually(lambda: showing(wanted), message="the new cluster")
            assert f'{job_status}""}}' not in found  # no stale state left behind

            requests: list[str] = []
            real = stack.kube.request

            async def counted(method: str, path: str, **kwargs: Any) -> JSON:
                requests.append(f"{method} {path}")
                return await real(method, path, **kwargs)

            monkeypatch.setattr(stack.kube, "request", counted)
            await scrape()
            await scrape()
            assert requests == []
            monkeypatch.undo()

            await stack.kube.delete(kube.RAYJOBS, namespace, name)

            async def job_gone() -> bool:
                return not any(key.startswith("kuberay_job") for key in await scrape())

            await eventually(job_gone, message="the deleted job's series to go")
            # A re-list without the cluster (its deletion missed) drops it too.
            bridge._on_listed(RAYCLUSTER, namespace, [])
            assert await scrape() == {}


async def test_an_ignored_namespace_has_no_series(stack: Stack) -> None:
    """KubeRay's own operator serves the series of the namespace it reconciles."""
    ours, theirs = await new_namespace(stack), await new_namespace(stack)
    beside = await create(stack, kube.RAYCLUSTERS, "RayCluster", theirs)
    mine = await create(stack, kube.RAYCLUSTERS, "RayCluster", ours)
    async with running_bridge(stack, ours, ignored=frozenset({theirs})) as bridge:
        # The same watcher would see both, as one watching every namespace does.
        bridge._on_event(RAYCLUSTER, "ADDED", beside)
        found = series(bridge.gauges.text())
    assert f'kuberay_cluster_info{{{of(mine)},owner_kind="None"}}' in found
    assert not [key for key in found if theirs in key]
