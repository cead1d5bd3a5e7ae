"""Services, after KubeRay's service_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from activities.builders import (
    BuildOptions,
    build_head_service,
    build_headless_service,
    build_serve_service,
    wants_headless_service,
    wants_serve_service,
)
from activities.builders.cluster_services import MissingServePortError, service_ports
from tests.activities.builders.fixtures import cluster, head_container, instance_dict

HEAD_SELECTOR = {
    "ray.io/cluster": "raycluster-sample",
    "ray.io/node-type": "head",
    "ray.io/identifier": "raycluster-sample-head",
    "app.kubernetes.io/name": "kuberay",
    "app.kubernetes.io/created-by": "kuberay-operator",
}
USER_PORTS = [
    {"containerPort": 6379, "name": "gcs-server"},
    {"containerPort": 8265, "name": "dashboard"},
    {"containerPort": 8000, "name": "serve"},
]


def _with_ports(ports: list[dict[str, Any]] | None) -> dict[str, Any]:
    data = instance_dict()
    if ports is not None:
        head_container(data)["ports"] = ports
    return data


def test_head_service_default() -> None:
    data = _with_ports(USER_PORTS)
    data["spec"]["headServiceAnnotations"] = {"k1": "v1", "k2": "v2"}
    service = build_head_service(cluster(data))
    assert service["apiVersion"] == "v1"
    assert service["kind"] == "Service"
    assert service["metadata"]["name"] == "raycluster-sample-head-svc"
    assert service["metadata"]["namespace"] == "default"
    assert service["metadata"]["labels"] == HEAD_SELECTOR
    assert service["metadata"]["annotations"] == {"k1": "v1", "k2": "v2"}
    assert service["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"
    assert service["spec"] == {
        "selector": HEAD_SELECTOR,
        "ports": [
            {"name": "dashboard", "port": 8265, "appProtocol": "tcp"},
            {"name": "gcs-server", "port": 6379, "appProtocol": "tcp"},
            {"name": "metrics", "port": 8080, "appProtocol": "tcp"},
            {"name": "serve", "port": 8000, "appProtocol": "tcp"},
        ],
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
    }


@pytest.mark.parametrize(
    ("ports", "expected"),
    [
        pytest.param(
            [],
            {
                "client": 10001,
                "gcs-server": 6379,
                "dashboard": 8265,
                "metrics": 8080,
                "serve": 8000,
            },
            id="defaults",
        ),
        pytest.param(
            None,
            {
                "client": 10001,
                "gcs-server": 6379,
                "dashboard": 8265,
                "metrics": 8080,
                "serve": 8000,
            },
            id="no-ports-field",
        ),
        pytest.param(
            [{"name": "random", "containerPort": 1234}],
            {"random": 1234, "metrics": 8080},
            id="metrics-always-added",
        ),
        pytest.param(
            [{"name": "metrics", "containerPort": 8081}], {"metrics": 8081}, id="custom-metrics"
        ),
        pytest.param(
            [{"containerPort": 1234}], {"1234-port": 1234, "metrics": 8080}, id="unnamed-port"
        ),
    ],
)
def test_service_ports(ports: list[dict[str, Any]] | None, expected: dict[str, int]) -> None:
    assert service_ports(cluster(_with_ports(ports))) == expected


@pytest.mark.parametrize(
    ("service_type", "cluster_ip_option", "headless"),
    [
        pytest.param(None, False, True, id="default-headless"),
        pytest.param("ClusterIP", False, True, id="clusterip-headless"),
        pytest.param("NodePort", False, False, id="nodeport"),
        pytest.param("LoadBalancer", False, False, id="loadbalancer"),
        pytest.param(None, True, False, id="operator-cluster-ip-switch"),
    ],
)
def test_headless_unless(service_type: str | None, cluster_ip_option: bool, headless: bool) -> None:
    data = instance_dict()
    if service_type:
        data["spec"]["headGroupSpec"]["serviceType"] = service_type
    options = BuildOptions(head_cluster_ip_service=cluster_ip_option)
    spec = build_head_service(cluster(data), options)["spec"]
    assert (spec.get("clusterIP") == "None") is headless
    assert spec.get("publishNotReadyAddresses", False) is headless
    assert spec.get("type") == service_type


def test_app_name_label_from_template() -> None:
    data = instance_dict()
    data["spec"]["headGroupSpec"]["template"]["metadata"]["labels"] = {
        "app.kubernetes.io/name": "testname",
        "ray.io/cluster": "ignored",
    }
    selector = build_head_service(cluster(data))["spec"]["selector"]
    assert selector == {**HEAD_SELECTOR, "app.kubernetes.io/name": "testname"}


def test_user_head_service_merged() -> None:
    data = _with_ports(USER_PORTS)
    data["spec"]["headServiceAnnotations"] = {"HeadServiceAnnotationKey1": "value1"}
    data["spec"]["headGroupSpec"]["headService"] = {
        "metadata": {
            "name": "user-custom-name",
            "namespace": "user-custom-namespace",
            "labels": {"userLabelKey": "userLabelValue", "ray.io/cluster": "userClusterName"},
            "annotations": {"userAnnotationKey": "v", "HeadServiceAnnotationKey1": "user_override"},
        },
        "spec": {
            "ports": [{"name": "userPort", "port": 12345}, {"name": "client", "port": 98765}],
            "selector": {"userSelectorKey": "x", "ray.io/cluster": "userSelectorClusterName"},
            "type": "LoadBalancer",
            "clusterIP": "",
        },
    }
    service = build_head_service(cluster(data))
    metadata, spec = service["metadata"], service["spec"]
    assert metadata["name"] == "user-custom-name"
    assert metadata["namespace"] == "default"
    assert metadata["labels"] == {**HEAD_SELECTOR, "userLabelKey": "userLabelValue"}
    assert metadata["annotations"] == {
        "userAnnotationKey": "v",
        "HeadServiceAnnotationKey1": "value1",
    }
    assert spec["selector"] == HEAD_SELECTOR
    assert spec["type"] == "LoadBalancer"
    assert spec["clusterIP"] == ""
    assert "publishNotReadyAddresses" not in spec
    assert [(p["name"], p["port"]) for p in spec["ports"]] == [
        ("userPort", 12345),
        ("client", 98765),
        ("dashboard", 8265),
        ("gcs-server", 6379),
        ("metrics", 8080),
        ("serve", 8000),
    ]


def test_user_head_service_with_nothing_set() -> None:
    data = instance_dict()
    data["spec"]["headGroupSpec"]["headService"] = {"metadata": {}}
    service = build_head_service(cluster(data))
    assert service["metadata"]["name"] == "raycluster-sample-head-svc"
    assert service["spec"]["selector"] == HEAD_SELECTOR


def test_serve_service() -> None:
    data = _with_ports([*USER_PORTS, {"name": "serve-grpc", "containerPort": 9000}])
    data["metadata"]["annotations"] = {"ray.io/enable-serve-service": "true"}
    data["spec"]["headGroupSpec"]["serviceType"] = "ClusterIP"
    model = cluster(data)
    assert wants_serve_service(model)
    service = build_serve_service(model)
    assert service["metadata"]["name"] == "raycluster-sample-serve-svc"
    assert service["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "raycluster-sample",
        "ray.io/originated-from-crd": "RayCluster",
        "ray.io/serve": "raycluster-sample-serve",
    }
    assert service["spec"] == {
        "selector": {"ray.io/cluster": "raycluster-sample"},
        "ports": [{"name": "serve", "port": 8000}, {"name": "serve-grpc", "port": 9000}],
        "type": "ClusterIP",
    }
    assert not wants_serve_service(cluster())


def test_serve_service_needs_a_serve_port() -> None:
    with pytest.raises(MissingServePortError):
        build_serve_service(cluster(_with_ports([{"name": "dashboard", "containerPort": 8265}])))


def test_headless_service() -> None:
    data = instance_dict()
    assert not wants_headless_service(cluster(data))
    data["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 2
    model = cluster(data)
    assert wants_headless_service(model)
    service = build_headless_service(model)
    assert service["metadata"]["name"] == "raycluster-sample-headless"
    assert service["metadata"]["labels"] == {"ray.io/headless-worker-svc": "raycluster-sample"}
    assert service["spec"] == {
        "clusterIP": "None",
        "selector": {"ray.io/cluster": "raycluster-sample", "ray.io/node-type": "worker"},
        "publishNotReadyAddresses": True,
        "type": "ClusterIP",
    }
