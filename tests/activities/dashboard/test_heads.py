"""A dashboard call goes only to the head Service the cluster owns, and never to an alias.

What these hold off: a tenant whose cluster's head Service is an ExternalName alias to another
namespace's head (`victim-head-svc.victim.svc.cluster.local`: every name in the URL still names
the tenant's own namespace, and cluster DNS does the rest), or who creates a Service under the
head Service's name before the cluster does, or edits the cluster's own into an alias later.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from activities.builders.cluster_services import build_head_service
from activities.dashboard.access import DashboardAccess, DashboardConnector
from activities.dashboard.errors import DashboardUnavailable
from activities.dashboard.heads import HeadService, HeadServiceRefused, head_of, head_pod_ip
from activities.kube import client as kube
from activities.kube.client import KubeClient
from crds.raycluster import RayCluster
from tests.activities.head_services import VICTIM_HEAD, make_alias_service, make_head_service

VICTIM = VICTIM_HEAD
TEMPLATE = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}


def cluster_body(name: str = "c") -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "a"},
        "spec": {"headGroupSpec": {"template": TEMPLATE}},
    }


def a_cluster() -> RayCluster:
    body = cluster_body()
    body["metadata"]["uid"] = "uid-of-c"
    return RayCluster.model_validate(body)


def owned_service() -> dict[str, Any]:
    return build_head_service(a_cluster())


def edited(service: dict[str, Any], **spec: Any) -> dict[str, Any]:
    changed = copy.deepcopy(service)
    changed["spec"].update(spec)
    return changed


def test_the_clusters_own_head_service_gives_its_address() -> None:
    head = head_of(owned_service(), a_cluster())
    assert head == HeadService(
        name="c-head-svc", namespace="a", dashboard_port=8265, target_port=8265
    )
    assert head.address("cluster.local") == "c-head-svc.a.svc.cluster.local:8265"


def test_a_numeric_target_port_is_the_pods_port() -> None:
    ports = [{"name": "dashboard", "port": 80, "targetPort": 8265}]
    head = head_of(edited(owned_service(), ports=ports), a_cluster())
    assert (head.dashboard_port, head.target_port) == (80, 8265)


def without_owner(service: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(service)
    del changed["metadata"]["ownerReferences"]
    return changed


def owned_by(service: dict[str, Any], uid: str) -> dict[str, Any]:
    changed = copy.deepcopy(service)
    changed["metadata"]["ownerReferences"][0]["uid"] = uid
    return changed


def elsewhere(service: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(service)
    changed["metadata"]["namespace"] = "victim"
    return changed


@pytest.mark.parametrize(
    ("service", "phrase"),
    [
        pytest.param(without_owner(owned_service()), "not owned by RayCluster c", id="no-owner"),
        pytest.param(owned_by(owned_service(), "uid-of-x"), "not owned", id="another-owner"),
        pytest.param(elsewhere(owned_service()), "not in the cluster's namespace", id="elsewhere"),
        pytest.param(
            edited(owned_service(), type="ExternalName", externalName=VICTIM),
            "ExternalName",
            id="external-name",
        ),
        pytest.param(
            edited(owned_service(), externalName=VICTIM), "ExternalName", id="external-name-only"
        ),
        pytest.param(
            edited(owned_service(), ports=[{"name": "serve", "port": 8000}]),
            "no port named 'dashboard'",
            id="no-dashboard-port",
        ),
        pytest.param(
            edited(owned_service(), ports=[{"name": "dashboard", "port": "8265"}]),
            "no port named 'dashboard'",
            id="port-not-a-number",
        ),
    ],
)
def test_a_service_that_is_not_the_clusters_own_head_is_refused(
    service: dict[str, Any], phrase: str
) -> None:
    with pytest.raises(HeadServiceRefused, match=phrase):
        head_of(service, a_cluster())


def test_no_head_service_yet_is_unavailable_not_refused() -> None:
    with pytest.raises(DashboardUnavailable, match="c-head-svc of RayCluster c does not exist"):
        head_of(None, a_cluster())


def head_pod(
    name: str = "c-head-abcde",
    ip: str = "10.244.0.9",
    host: str = "10.0.0.1",
    owner: str = "uid-of-c",
    **labels: str,
) -> dict[str, Any]:
    labels = {"ray.io/cluster": "c", "ray.io/node-type": "head", **labels}
    owners = [{"kind": "RayCluster", "name": "c", "uid": owner, "controller": True}]
    meta = {"name": name, "namespace": "a", "labels": labels, "ownerReferences": owners}
    return {"metadata": meta, "status": {"podIP": ip, "hostIP": host}}


def test_a_direct_call_goes_to_the_clusters_own_head_pod() -> None:
    impostor = head_pod("c-head-aaaaa", ip="10.244.0.66", owner="uid-of-x")
    worker = head_pod("c-worker-aaaaa", ip="10.244.0.67", **{"ray.io/node-type": "worker"})
    pods = [impostor, worker, head_pod()]
    assert head_pod_ip(pods, a_cluster()) == "10.244.0.9"


def test_a_head_pod_on_the_hosts_network_is_not_called_directly() -> None:
    with pytest.raises(HeadServiceRefused, match="on the host's network"):
        head_pod_ip([head_pod(ip="10.0.0.1", host="10.0.0.1")], a_cluster())


def test_no_head_pod_address_yet_is_unavailable() -> None:
    with pytest.raises(DashboardUnavailable, match="no head pod with an address yet"):
        head_pod_ip([head_pod(ip="")], a_cluster())


# --- through the connector, against devcluster -------------------------------------------------


class Recorder:
    """The network: records every request and answers 200."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json=[])


async def created_cluster(client: KubeClient) -> RayCluster:
    await client.create(kube.NAMESPACES, None, {"metadata": {"name": "a"}})
    return RayCluster.model_validate(await client.create(kube.RAYCLUSTERS, "a", cluster_body()))


@pytest.mark.parametrize("access", list(DashboardAccess))
async def test_a_head_service_made_before_the_cluster_is_not_called(
    client: KubeClient, access: DashboardAccess
) -> None:
    """The tenant's own ExternalName Service under the head Service's name."""
    cluster = await created_cluster(client)
    await make_alias_service(client, "a", "c-head-svc")
    network = Recorder()
    connector = DashboardConnector(client, access, httpx.MockTransport(network))
    with pytest.raises(HeadServiceRefused, match="not owned by RayCluster c"):
        async with connector.open(cluster):
            pass
    assert network.requests == []


async def test_the_clusters_head_service_turned_into_an_alias_is_not_called(
    client: KubeClient,
) -> None:
    cluster = await created_cluster(client)
    await make_head_service(client, "a", "c")
    patch = {"spec": {"type": "ExternalName", "externalName": VICTIM, "clusterIP": None}}
    await client.patch(kube.SERVICES, "a", "c-head-svc", patch)
    network = Recorder()
    connector = DashboardConnector(client, DashboardAccess.DIRECT, httpx.MockTransport(network))
    with pytest.raises(HeadServiceRefused, match="ExternalName"):
        async with connector.open(cluster):
            pass
    assert network.requests == []


@pytest.mark.parametrize(
    ("access", "url"),
    [
        pytest.param(
            DashboardAccess.PROXY,
            "/api/v1/namespaces/a/services/c-head-svc:dashboard/proxy/api/jobs/",
            id="proxy",
        ),
        pytest.param(DashboardAccess.DIRECT, "http://10.244.0.9:8265/api/jobs/", id="direct"),
    ],
)
async def test_the_clusters_own_head_service_is_called(
    client: KubeClient, access: DashboardAccess, url: str
) -> None:
    cluster = await created_cluster(client)
    await make_head_service(client, "a", "c")
    pod = head_pod(owner=cluster.metadata.uid or "")
    status = pod.pop("status")
    await client.create(kube.PODS, "a", {**pod, "spec": {"containers": [{"name": "ray-head"}]}})
    await client.patch(kube.PODS, "a", "c-head-abcde", {"status": status}, sub="status")
    network = Recorder()
    connector = DashboardConnector(client, access, httpx.MockTransport(network))
    async with connector.open(cluster) as dashboard:
        await dashboard.list_jobs()
    (request,) = network.requests
    assert str(request.url).endswith(url)
