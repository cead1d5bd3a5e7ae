"""The RayService dashboard activities: devcluster for the objects, a mock transport for Ray."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.builders import rayservice as rs
from activities.builders.names import owner_reference
from activities.dashboard.access import DashboardConnector
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.rayservice import contract
from activities.rayservice.kube_effects import ServiceActivities
from activities.rayservice.ray_effects import HeadLabeler, ServeActivities
from crds.raycluster import RayCluster
from crds.refs import ObjectRef
from tests.activities.head_services import make_head_service
from tests.activities.rayservice.test_kube_effects import make_service, run

SECRET_CONFIG = (
    "applications:\n"
    "  - name: app\n"
    "    import_path: m:app\n"
    "    runtime_env:\n"
    "      env_vars:\n"
    "        API_KEY: s3cr3t-value\n"
)

Handler = Callable[[httpx.Request], httpx.Response]


async def service_with_cluster(client: KubeClient, **spec: Any) -> tuple[ObjectRef, str]:
    acts = ServiceActivities(client)
    ref = await make_service(client, **spec)
    goal = (await run(acts.read, contract.ReadServiceInput(ref=ref))).goal_hash
    name = f"{ref.name}-abcde"
    await run(
        acts.create_cluster, contract.CreateServiceClusterInput(ref=ref, name=name, goal_hash=goal)
    )
    await make_head_service(client, ref.namespace, name)
    return ref, name


def serve_acts(client: KubeClient, handler: Handler) -> ServeActivities:
    return ServeActivities(
        client, DashboardConnector(client, transport=httpx.MockTransport(handler))
    )


def apps(status: str) -> httpx.Response:
    body = {"applications": {"app": {"status": status, "deployments": {}}}}
    return httpx.Response(200, json=body)


async def test_apply_puts_the_config_and_returns_only_its_hash(client: KubeClient) -> None:
    ref, cluster = await service_with_cluster(client)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200)

    acts = serve_acts(client, handler)
    arg = contract.ApplyServeConfigInput(ref=ref, cluster=cluster, target_capacity=20)
    result = await run(acts.apply_serve_config, arg)
    spec = (await client.get(kube.RAYSERVICES, "default", ref.name))["spec"]
    assert result.config_hash == rs.serve_config_hash(spec["serveConfigV2"])
    (request,) = seen
    assert request.method == "PUT"
    assert request.url.path == (
        f"/api/v1/namespaces/default/services/{cluster}-head-svc:dashboard/proxy"
        "/api/serve/applications/"
    )
    assert json.loads(request.content) == {
        "applications": [{"name": "app", "import_path": "m:app"}],
        "target_capacity": 20,
    }


RUNNING_DETAILS = {
    "proxy_location": "EveryNode",
    "http_options": {"host": "0.0.0.0", "port": 8000},
    "target_capacity": 100,
    "applications": {
        "old": {
            "status": "RUNNING",
            "deployments": {},
            "deployed_app_config": {"name": "old", "import_path": "m:old_app"},
        }
    },
}


async def test_keep_deployed_puts_back_what_the_cluster_runs_with_a_new_capacity(
    client: KubeClient,
) -> None:
    """The active cluster of an incremental upgrade: its own config, not the spec's."""
    ref, cluster = await service_with_cluster(client)
    puts: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=RUNNING_DETAILS)
        puts.append(json.loads(request.content))
        return httpx.Response(200)

    acts = serve_acts(client, handler)
    arg = contract.ApplyServeConfigInput(
        ref=ref, cluster=cluster, target_capacity=40, keep_deployed=True
    )
    result = await run(acts.apply_serve_config, arg)
    assert result.config_hash == ""  # nothing of the spec went there
    assert puts == [
        {
            "applications": [{"name": "old", "import_path": "m:old_app"}],
            "proxy_location": "EveryNode",
            "http_options": {"host": "0.0.0.0", "port": 8000},
            "target_capacity": 40,
        }
    ]


async def test_keep_deployed_on_a_cluster_running_nothing_puts_the_spec(
    client: KubeClient,
) -> None:
    ref, cluster = await service_with_cluster(client)
    puts: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"applications": {}})
        puts.append(json.loads(request.content))
        return httpx.Response(200)

    acts = serve_acts(client, handler)
    arg = contract.ApplyServeConfigInput(
        ref=ref, cluster=cluster, target_capacity=100, keep_deployed=True
    )
    result = await run(acts.apply_serve_config, arg)
    spec = (await client.get(kube.RAYSERVICES, "default", ref.name))["spec"]
    assert result.config_hash == rs.serve_config_hash(spec["serveConfigV2"])
    assert puts[0]["applications"] == [{"name": "app", "import_path": "m:app"}]


async def test_a_rejected_config_fails_without_its_secrets(client: KubeClient) -> None:
    ref, cluster = await service_with_cluster(client, serveConfigV2=SECRET_CONFIG)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, text=f"bad config: {request.content.decode()}")

    acts = serve_acts(client, handler)
    with pytest.raises(ApplicationError) as failure:
        await run(acts.apply_serve_config, contract.ApplyServeConfigInput(ref=ref, cluster=cluster))
    assert failure.value.non_retryable and failure.value.type == "DashboardRejected"
    assert "s3cr3t" not in str(failure.value) and "<redacted>" in str(failure.value)


async def test_read_status_and_wait_for_consecutive_healthy_polls(client: KubeClient) -> None:
    ref, cluster = await service_with_cluster(client)
    answers = iter(["DEPLOYING", "RUNNING", "RUNNING", "RUNNING"])

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["api_type"] == "declarative"
        return apps(next(answers))

    acts = serve_acts(client, handler)
    status = await run(
        acts.read_serve_status, contract.ReadServeStatusInput(ref=ref, cluster=cluster)
    )
    assert status.applications["app"].status == "DEPLOYING"
    env = ActivityEnvironment()
    beats: list[Any] = []
    env.on_heartbeat = lambda *details: beats.append(details[0])
    wait = contract.WaitServeHealthyInput(
        ref=ref, cluster=cluster, consecutive=2, interval_seconds=0
    )
    health = await env.run(acts.wait_serve_healthy, wait)
    assert health.healthy and health.consecutive_healthy == 2 and beats == [1, 2]


async def test_wait_reports_unhealthy_at_its_bound(client: KubeClient) -> None:
    ref, cluster = await service_with_cluster(client)
    acts = serve_acts(client, lambda request: httpx.Response(503))
    wait = contract.WaitServeHealthyInput(ref=ref, cluster=cluster, bound_seconds=0)
    health = await run(acts.wait_serve_healthy, wait)
    assert not health.healthy and health.consecutive_healthy == 0


async def running_head(client: KubeClient, cluster: str, name: str, owned: bool = True) -> None:
    """A Running pod labelled as the cluster's head; owned by the cluster, as its own are."""
    labels = {"ray.io/cluster": cluster, "ray.io/node-type": "head", "ray.io/serve": "false"}
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if owned:
        obj = await client.get(kube.RAYCLUSTERS, "default", cluster)
        meta["ownerReferences"] = [owner_reference(RayCluster.model_validate(obj))]
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]},
    }
    await client.create(kube.PODS, "default", body)
    await client.patch(kube.PODS, "default", name, {"status": {"phase": "Running"}}, sub="status")


async def test_a_head_pod_the_cluster_does_not_own_is_never_probed(client: KubeClient) -> None:
    ref, cluster = await service_with_cluster(client)
    await running_head(client, cluster, f"{cluster}-head-xxxxx", owned=False)
    probed: list[httpx.Request] = []
    labeler = HeadLabeler(client, serve_acts(client, lambda r: probed.append(r) or apps("RUNNING")))
    assert await labeler.label(ref, cluster, exclude_head=False) is None
    assert probed == []


async def test_head_serve_label_follows_the_proxy_health(client: KubeClient) -> None:
    ref, cluster = await service_with_cluster(client)
    pod = f"{cluster}-head-xxxxx"
    await running_head(client, cluster, pod)
    healthy = {"now": True}
    probed: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        probed.append(request.url.path)
        return httpx.Response(200 if healthy["now"] else 503, text="success")

    labeler = HeadLabeler(client, serve_acts(client, handler))

    async def label(exclude: bool = False) -> str:
        arg = contract.HeadServeLabelInput(ref=ref, cluster=cluster, exclude_head=exclude)
        await run(labeler.set_head_serve_label, arg)
        stored = await client.get(kube.PODS, "default", pod)
        return str(stored["metadata"]["labels"]["ray.io/serve"])

    async def label_events() -> list[str]:
        found = await client.list_all(kube.EVENTS, "default")
        return [e["message"] for e in found if e["reason"] == "UpdatedHeadPodServeLabel"]

    assert await label() == "true"
    assert probed == [f"/api/v1/namespaces/default/pods/{pod}:8000/proxy/-/healthz"]
    assert await label() == "true"  # unchanged: no second Event
    assert await label_events() == [f'Set ray.io/serve="true" on the head pod default/{pod}']
    healthy["now"] = False
    assert await label() == "false"
    healthy["now"] = True
    assert await label(exclude=True) == "false" and len(probed) == 3
    # As KubeRay's: one Event on the RayService per change of the label (true, false).
    assert len(await label_events()) == 2
