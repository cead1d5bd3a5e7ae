"""The NetworkPolicies of the worker's and the bridge's pods, as kustomize and Helm render them.

Ingress: the health port from anywhere (the kubelet probes from its node), the metrics port
from Prometheus alone; egress: DNS, the API server, the Temporal frontend and, with direct
dashboard access, the Ray heads. Both renderings hold the same rules, and each rule names
ports the pods really have. `test_apply.py` has the real API server accept them.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.settings import Settings
from tests.deploy.rendering import (
    Doc,
    by_kind,
    container,
    helm_docs,
    kustomize_docs,
    kustomize_overlay_docs,
    settings_env,
)

COMPONENTS = ("worker", "bridge")
POLICY, RAY_HEADS = "kuberay-temporal", "kuberay-temporal-worker-ray-heads"
PROMETHEUS = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
}
RENDERINGS = pytest.mark.parametrize(
    "render", [kustomize_docs, helm_docs], ids=["kustomize", "helm"]
)


def _pod_labels(docs: list[Doc], component: str) -> dict[str, str]:
    deployment = by_kind(docs, "Deployment")[f"kuberay-temporal-{component}"]
    return dict(deployment["spec"]["template"]["metadata"]["labels"])


def _selects(policy: Doc, labels: dict[str, str]) -> bool:
    return bool(policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items())


def _ports(rule: dict[str, Any]) -> list[tuple[str, int | str]]:
    return [(port["protocol"], port["port"]) for port in rule["ports"]]


@RENDERINGS
def test_the_pods_take_the_health_port_from_anywhere_and_metrics_from_prometheus(
    render: Any,
) -> None:
    docs = render()
    policy = by_kind(docs, "NetworkPolicy")[POLICY]
    assert policy["metadata"]["namespace"] == "kuberay-temporal"
    assert all(_selects(policy, _pod_labels(docs, c)) for c in COMPONENTS)
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    probes, metrics = policy["spec"]["ingress"]
    # The kubelet probes from its node's address, which no selector names.
    assert "from" not in probes and _ports(probes) == [("TCP", "health")]
    assert metrics["from"] == [PROMETHEUS] and _ports(metrics) == [("TCP", "metrics")]
    for component in COMPONENTS:  # the names resolve to the ports the processes listen on
        ports = {
            p["name"]
            for p in container(by_kind(docs, "Deployment")[f"kuberay-temporal-{component}"])[
                "ports"
            ]
        }
        assert {"health", "metrics"} <= ports


@RENDERINGS
def test_the_pods_reach_dns_the_api_server_and_temporal_only(render: Any) -> None:
    docs = render()
    egress = by_kind(docs, "NetworkPolicy")[POLICY]["spec"]["egress"]
    temporal = Settings.from_env(settings_env(docs, "worker")).temporal_address
    assert [_ports(rule) for rule in egress] == [
        [("UDP", 53), ("TCP", 53)],
        [("TCP", 443), ("TCP", 6443)],
        [("TCP", int(temporal.rsplit(":", 1)[1]))],
    ]
    assert not [rule for rule in egress if "to" in rule]  # by port: addresses vary by cluster


@RENDERINGS
def test_only_the_worker_reaches_the_ray_heads_dashboards(render: Any) -> None:
    docs = render()
    policy = by_kind(docs, "NetworkPolicy")[RAY_HEADS]
    assert _selects(policy, _pod_labels(docs, "worker"))
    assert not _selects(policy, _pod_labels(docs, "bridge"))
    assert policy["spec"]["policyTypes"] == ["Egress"]
    (rule,) = policy["spec"]["egress"]
    heads = {"namespaceSelector": {}, "podSelector": {"matchLabels": {"ray.io/node-type": "head"}}}
    assert rule["to"] == [heads]  # in any namespace, heads only
    assert _ports(rule) == [("TCP", "dashboard"), ("TCP", "serve"), ("TCP", 8265), ("TCP", 8000)]


def test_both_renderings_hold_the_same_rules() -> None:
    helm, kustomize = (
        by_kind(helm_docs(), "NetworkPolicy"),
        by_kind(kustomize_docs(), "NetworkPolicy"),
    )
    assert set(helm) == set(kustomize) == {POLICY, RAY_HEADS}
    for name, mine in helm.items():
        theirs = kustomize[name]
        for key in ("policyTypes", "ingress", "egress"):
            assert mine["spec"].get(key) == theirs["spec"].get(key), (name, key)
        # The chart selects its release's pods, as its Deployments do.
        assert _selects(theirs, mine["spec"]["podSelector"]["matchLabels"])


@pytest.mark.parametrize(
    "render",
    [
        lambda: kustomize_overlay_docs("dashboard-proxy"),
        lambda: helm_docs({"worker": {"dashboardAccess": "proxy"}}),
    ],
    ids=["kustomize", "helm"],
)
def test_through_the_proxy_the_worker_reaches_no_ray_head(render: Any) -> None:
    docs = render()
    assert Settings.from_env(settings_env(docs, "worker")).dashboard_access == "proxy"
    assert set(by_kind(docs, "NetworkPolicy")) == {POLICY}


def test_helm_values_choose_the_scrapers_and_the_temporal_port() -> None:
    scraper = {"namespaceSelector": {"matchLabels": {"team": "observability"}}}
    extra = {"ports": [{"protocol": "TCP", "port": 4318}]}
    values = {
        "networkPolicy": {"metricsFrom": [scraper], "extraEgress": [extra]},
        "temporal": {"address": "ns.acct.tmprl.cloud:443"},
    }
    policy = by_kind(helm_docs(values), "NetworkPolicy")[POLICY]
    assert policy["spec"]["ingress"][1]["from"] == [scraper]
    assert policy["spec"]["egress"][2:] == [{"ports": [{"protocol": "TCP", "port": 443}]}, extra]


def test_helm_without_scrapers_lets_nobody_scrape() -> None:
    """A rule without `from` would admit everybody: none is rendered instead."""
    policy = by_kind(helm_docs({"networkPolicy": {"metricsFrom": []}}), "NetworkPolicy")[POLICY]
    (probes,) = policy["spec"]["ingress"]
    assert _ports(probes) == [("TCP", "health")]


def test_helm_can_leave_the_policies_out() -> None:
    assert by_kind(helm_docs({"networkPolicy": {"enabled": False}}), "NetworkPolicy") == {}
