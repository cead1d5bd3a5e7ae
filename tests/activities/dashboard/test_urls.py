"""A dashboard call goes only to a Service or pod of the cluster's own namespace.

Dashboard URLs are built from Service, pod and namespace names; a CR-chosen name must not turn
into another namespace's proxy path or another host, and a cluster's Ray token must never go
to a dashboard outside the cluster's namespace.
"""

from __future__ import annotations

import httpx
import pytest

from activities.dashboard.errors import DashboardError
from activities.dashboard.urls import dashboard_base_url, pod_proxied_base_url, proxied_base_url
from activities.kube.client import KubeClient
from activities.rayjob.dashboard_access import (
    DashboardAccess,
    DashboardConnector,
    split_dashboard_url,
)
from crds.raycluster import RayCluster

API = "https://127.0.0.1:6443"


@pytest.mark.parametrize(
    "name",
    ["../../b/services/victim-head-svc", "evil.example:80/#", "a/b", "", "Head", "x" * 64],
)
def test_no_url_is_built_from_a_name_that_is_not_a_label(name: str) -> None:
    with pytest.raises(DashboardError, match="refusing to address"):
        proxied_base_url(API, "a", name)
    with pytest.raises(DashboardError, match="refusing to address"):
        proxied_base_url(API, name, "head-svc")
    with pytest.raises(DashboardError, match="refusing to address"):
        dashboard_base_url(name, "a")
    with pytest.raises(DashboardError, match="refusing to address"):
        pod_proxied_base_url(API, "a", name, 8000)


def test_valid_names_make_the_urls_they_always_made() -> None:
    assert proxied_base_url(API, "a", "head-svc") == (
        f"{API}/api/v1/namespaces/a/services/head-svc:dashboard/proxy"
    )
    assert dashboard_base_url("head-svc", "a") == "http://head-svc.a.svc.cluster.local:8265"
    assert pod_proxied_base_url(API, "a", "c-head-x.y", 8000) == (
        f"{API}/api/v1/namespaces/a/pods/c-head-x.y:8000/proxy"
    )


@pytest.mark.parametrize(
    "url",
    ["..%2F..%2Fb.a.svc.cluster.local:8265", "svc", "Svc.a.svc:8265", ".a.svc:8265"],
)
def test_a_dashboard_url_must_name_a_service_and_a_namespace(url: str) -> None:
    with pytest.raises(ValueError, match="does not name"):
        split_dashboard_url(url)


def _cluster(namespace: str) -> RayCluster:
    template = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}
    return RayCluster.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "c", "namespace": namespace},
            "spec": {"headGroupSpec": {"template": template}},
        }
    )


@pytest.mark.parametrize("access", list(DashboardAccess))
async def test_a_cluster_is_never_given_a_dashboard_in_another_namespace(
    client: KubeClient, access: DashboardAccess
) -> None:
    calls: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: calls.append(r) or httpx.Response(200, json={}))
    connector = DashboardConnector(client, access, transport)
    with pytest.raises(DashboardError, match="outside namespace 'a'"):
        async with connector.open("head-svc.b.svc.cluster.local:8265", _cluster("a")):
            pass
    async with connector.open("head-svc.a.svc.cluster.local:8265", _cluster("a")) as dashboard:
        assert dashboard is not None
    assert calls == []
