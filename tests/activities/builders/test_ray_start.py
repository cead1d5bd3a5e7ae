from __future__ import annotations

from typing import Any

import pytest

from activities.builders import ray_start
from crds.enums import RayNodeType


def _generate(node_type: RayNodeType, params: dict[str, str], resources: dict[str, Any]) -> str:
    ray_start.add_container_resources(params, resources)
    return ray_start.ray_start_command(node_type, params)


# KubeRay pod_test.go TestGenerateRayStartCommand, spacing included.
@pytest.mark.parametrize(
    ("node_type", "params", "limits", "expected"),
    [
        pytest.param(
            RayNodeType.WORKER,
            {},
            {"nvidia.com/gpu": "1"},
            "ray start  --num-gpus=1 ",
            id="worker-gpu",
        ),
        pytest.param(
            RayNodeType.WORKER,
            {},
            {"nvidia.com/mig-2g.32gb": "1"},
            "ray start  --num-gpus=1 ",
            id="worker-mig-gpu",
        ),
        pytest.param(
            RayNodeType.WORKER,
            {},
            {"google.com/tpu": "4"},
            """ray start  --resources='{"TPU":4}' """,
            id="worker-tpu",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {},
            {"aws.amazon.com/neuroncore": "4"},
            """ray start --head  --resources='{"neuron_cores":4}' """,
            id="head-neuron",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {},
            {"aws.amazon.com/neuroncore": "4", "nvidia.com/gpu": "1"},
            """ray start --head  --num-gpus=1  --resources='{"neuron_cores":4}' """,
            id="head-multiple-accelerators",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {},
            {"google.com/tpu": "8", "aws.amazon.com/neuroncore": "4", "nvidia.com/gpu": "1"},
            """ray start --head  --num-gpus=1  --resources='{"neuron_cores":4}' """,
            id="head-first-custom-accelerator-wins",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"resources": '"{"custom_resource":2}"'},
            {"aws.amazon.com/neuroncore": "4"},
            """ray start --head  --resources='{"custom_resource":2,"neuron_cores":4}' """,
            id="head-existing-resources",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"resources": """'{"custom_resource":2,"neuron_cores":3}'"""},
            {"aws.amazon.com/neuroncore": "4"},
            """ray start --head  --resources='{"custom_resource":2,"neuron_cores":3}' """,
            id="head-existing-neuron-cores",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"resources": """'{"custom_resource":2,"TPU":4}'"""},
            {"google.com/tpu": "8"},
            """ray start --head  --resources='{"custom_resource":2,"TPU":4}' """,
            id="head-existing-tpu",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"resources": "{"},
            {"aws.amazon.com/neuroncore": "4"},
            "ray start --head  --resources={ ",
            id="head-invalid-resources",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"resources": "[" * 5000},
            {"aws.amazon.com/neuroncore": "4"},
            "ray start --head  --resources=" + "[" * 5000 + " ",
            id="head-resources-nested-too-deep",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"resources": '{"big": 1' + "0" * 400 + "}"},
            {"aws.amazon.com/neuroncore": "4"},
            'ray start --head  --resources={"big": 1' + "0" * 400 + "} ",
            id="head-resources-too-large-for-a-float",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"include-log-monitor": "false"},
            {},
            "ray start --head  --include-log-monitor=false ",
            id="explicit-false",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"include-log-monitor": "true"},
            {},
            "ray start --head  --include-log-monitor=true ",
            id="explicit-true",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {"block": "True", "disable-usage-stats": "false"},
            {},
            "ray start --head  --block ",
            id="bare-flags",
        ),
    ],
)
def test_generate_ray_start_command(
    node_type: RayNodeType, params: dict[str, str], limits: dict[str, str], expected: str
) -> None:
    assert _generate(node_type, dict(params), {"limits": limits}) == expected


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param({"limits": {"cpu": "500m"}}, {"num-cpus": "1"}, id="cpu-rounds-up"),
        pytest.param(
            {"requests": {"cpu": "2"}, "limits": {"memory": "1Gi"}},
            {"num-cpus": "2", "memory": "1073741824"},
            id="cpu-from-request",
        ),
        pytest.param({"requests": {"memory": "1Gi"}}, {}, id="memory-only-from-limit"),
        pytest.param(
            {"limits": {"cpu": "0", "amd.com/gpu": "2"}}, {"num-gpus": "2"}, id="zero-cpu-ignored"
        ),
    ],
)
def test_container_resources(resources: dict[str, Any], expected: dict[str, str]) -> None:
    params: dict[str, str] = {}
    ray_start.add_container_resources(params, resources)
    assert params == expected


def test_user_params_win_over_container_resources() -> None:
    params = {"num-cpus": "0", "memory": "5", "num-gpus": "0"}
    ray_start.add_container_resources(params, {"limits": {"cpu": "4", "nvidia.com/gpu": "1"}})
    assert params == {"num-cpus": "0", "memory": "5", "num-gpus": "0"}


# KubeRay pod_test.go TestUpdateRayStartParamsResources.
@pytest.mark.parametrize(
    ("initial", "resources", "expected"),
    [
        pytest.param({"existing": "true"}, None, {"existing": "true"}, id="no-op"),
        pytest.param(
            {},
            {"cpu": "2", "memory": "4Gi"},
            {"num-cpus": "2", "memory": "4294967296"},
            id="cpu-memory",
        ),
        pytest.param(
            {}, {"CPU": "2", "GPU": "4"}, {"num-cpus": "2", "num-gpus": "4"}, id="uppercase-names"
        ),
        pytest.param(
            {},
            {"nvidia.com/gpu": "1", "TPU": "4"},
            {"num-gpus": "1", "resources": """'{"TPU":4}'"""},
            id="gpu-and-custom",
        ),
        pytest.param(
            {"num-cpus": "1", "memory": "1000", "resources": """'{"Custom-Resource": 10}'"""},
            {"cpu": "4", "Custom-Resource": "5"},
            {"num-cpus": "4", "memory": "1000", "resources": """'{"Custom-Resource":5}'"""},
            id="override-existing",
        ),
        pytest.param(
            {},
            {"cpu": "not-a-quantity", "fractional": "500m"},
            {"resources": """'{"fractional":0.5}'"""},
            id="invalid-skipped",
        ),
    ],
)
def test_group_resources(
    initial: dict[str, str], resources: dict[str, str] | None, expected: dict[str, str]
) -> None:
    params = dict(initial)
    ray_start.apply_group_resources(params, resources)
    assert params == expected


# KubeRay pod_test.go TestUpdateRayStartParamsLabels.
@pytest.mark.parametrize(
    ("initial", "labels", "expected"),
    [
        pytest.param(
            {},
            {
                "topology.kubernetes.io/zone": "us-central2",
                "ray.io/node-group": "worker-group-1",
                "cloud.google.com/gke-spot": "true",
            },
            {
                "labels": "cloud.google.com/gke-spot=true,ray.io/node-group=worker-group-1,"
                "topology.kubernetes.io/zone=us-central2"
            },
            id="sorted",
        ),
        pytest.param(
            {"labels": "old=label", "resources": "kept"},
            {"new": "label"},
            {"labels": "new=label", "resources": "kept"},
            id="replaces",
        ),
        pytest.param({"labels": "some=labels"}, None, {"labels": "some=labels"}, id="nil"),
        pytest.param({"labels": "some=labels"}, {}, {"labels": "some=labels"}, id="empty"),
    ],
)
def test_group_labels(
    initial: dict[str, str], labels: dict[str, str] | None, expected: dict[str, str]
) -> None:
    params = dict(initial)
    ray_start.apply_group_labels(params, labels)
    assert params == expected


# KubeRay pod_test.go TestSetMissingRayStartParams*.
@pytest.mark.parametrize(
    ("node_type", "given", "expected"),
    [
        pytest.param(
            RayNodeType.HEAD,
            {},
            {
                "dashboard-host": "0.0.0.0",
                "metrics-export-port": "8080",
                "block": "true",
                "dashboard-agent-listen-port": "52365",
            },
            id="head-defaults",
        ),
        pytest.param(
            RayNodeType.WORKER,
            {},
            {
                "address": "svc.ns.svc.cluster.local:6379",
                "metrics-export-port": "8080",
                "block": "true",
                "dashboard-agent-listen-port": "52365",
            },
            id="worker-defaults",
        ),
        pytest.param(
            RayNodeType.HEAD,
            {
                "address": "custom:1234",
                "block": "false",
                "metrics-export-port": "8081",
                "dashboard-host": "1.2.3.4",
            },
            {
                "address": "custom:1234",
                "block": "true",
                "metrics-export-port": "8081",
                "dashboard-host": "1.2.3.4",
                "dashboard-agent-listen-port": "52365",
            },
            id="head-user-values-kept-but-block-forced",
        ),
        pytest.param(
            RayNodeType.WORKER,
            {"address": "custom:1234"},
            {
                "address": "custom:1234",
                "metrics-export-port": "8080",
                "block": "true",
                "dashboard-agent-listen-port": "52365",
            },
            id="worker-custom-address",
        ),
    ],
)
def test_missing_params(
    node_type: RayNodeType, given: dict[str, str], expected: dict[str, str]
) -> None:
    params = dict(given)
    ray_start.add_missing_params(params, node_type, "6379", "svc.ns.svc.cluster.local")
    assert params == expected


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(4.0, "4", id="integral"),
        pytest.param(0.5, "0.5", id="fraction"),
        pytest.param(1e-05, "0.00001", id="small-positional"),
        pytest.param(1e-07, "1e-7", id="tiny-exponent"),
        pytest.param(1e21, "1e+21", id="huge-exponent"),
        pytest.param(1e16, "10000000000000000", id="large-positional"),
    ],
)
def test_go_float(value: float, text: str) -> None:
    assert ray_start.go_float(value) == text


@pytest.mark.parametrize(
    ("name", "is_gpu"),
    [
        pytest.param("nvidia.com/gpu", True, id="nvidia"),
        pytest.param("amd.com/gpu", True, id="amd"),
        pytest.param("nvidia.com/mig-12g.128gb", True, id="mig"),
        pytest.param("nvidia.com/gpu-mig-12g.128gb", False, id="mig-bad-format"),
        pytest.param("cpu", False, id="cpu"),
    ],
)
def test_is_gpu_resource(name: str, is_gpu: bool) -> None:
    assert ray_start.is_gpu_resource(name) is is_gpu


def test_head_port() -> None:
    assert ray_start.head_port({}) == "6379"
    assert ray_start.head_port({"port": "9999"}) == "9999"
