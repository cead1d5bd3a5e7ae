"""Status counters, after KubeRay's util_test.go (GetWorkerGroupDesiredReplicas, Calculate*).

The replica counts live in `crds.replicas`; the resources in the builders.
"""

from __future__ import annotations

from typing import Any

import pytest

from activities.builders import desired_resources
from crds import replicas
from crds.quantities import parse_quantity
from crds.raycluster import WorkerGroupSpec
from tests.activities.builders.fixtures import cluster, instance_dict


def _group(**fields: Any) -> WorkerGroupSpec:
    return WorkerGroupSpec.model_validate({"groupName": "g", "template": {}, **fields})


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({"minReplicas": 1, "maxReplicas": 5}, 1, id="nil-replicas-is-min"),
        pytest.param({"replicas": 3, "minReplicas": 1, "maxReplicas": 5}, 3, id="in-range"),
        pytest.param({"replicas": 6, "minReplicas": 1, "maxReplicas": 5}, 5, id="above-max"),
        pytest.param({"replicas": 0, "minReplicas": 1, "maxReplicas": 5}, 1, id="below-min"),
        pytest.param(
            {"replicas": 3, "minReplicas": 5, "maxReplicas": 1, "suspend": True}, 0, id="suspended"
        ),
        pytest.param(
            {"replicas": 5, "minReplicas": 1, "maxReplicas": 5, "numOfHosts": 4},
            20,
            id="multi-host",
        ),
        pytest.param({"replicas": 2}, 2, id="no-bounds"),
    ],
)
def test_group_desired_replicas(fields: dict[str, Any], expected: int) -> None:
    assert replicas.desired_pods(_group(**fields)) == expected


def _pod(cpu: str, memory: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


def _cluster(groups: list[dict[str, Any]]) -> dict[str, Any]:
    data = instance_dict()
    data["spec"]["headGroupSpec"]["template"] = _pod("1", "100Mi")
    data["spec"]["workerGroupSpecs"] = [
        {"groupName": f"g{i}", **group} for i, group in enumerate(groups)
    ]
    return data


@pytest.mark.parametrize(
    ("groups", "cpu", "memory", "desired", "minimum", "maximum"),
    [
        pytest.param([], "1", "100Mi", 0, 0, 0, id="head-only"),
        pytest.param(
            [{"numOfHosts": 2, "replicas": 4, "minReplicas": 3, "template": _pod("1", "200Mi")}],
            "9",
            "1700Mi",
            8,
            6,
            2 * (2**31 - 1),
            id="one-group",
        ),
        pytest.param(
            [
                {
                    "numOfHosts": 2,
                    "replicas": 2,
                    "minReplicas": 1,
                    "maxReplicas": 3,
                    "template": _pod("2", "100Mi"),
                },
                {"replicas": 3, "minReplicas": 0, "maxReplicas": 4, "template": _pod("1", "200Mi")},
            ],
            "12",
            "1100Mi",
            7,
            2,
            10,
            id="two-groups",
        ),
        pytest.param(
            [{"replicas": 3, "maxReplicas": 3, "suspend": True, "template": _pod("1", "200Mi")}],
            "1",
            "100Mi",
            0,
            0,
            0,
            id="suspended-group",
        ),
    ],
)
def test_desired_resources(
    groups: list[dict[str, Any]], cpu: str, memory: str, desired: int, minimum: int, maximum: int
) -> None:
    ray_cluster = cluster(_cluster(groups))
    result = desired_resources(ray_cluster)
    assert (result.cpu, result.memory) == (cpu, memory)
    assert replicas.desired_worker_pods(ray_cluster.spec) == desired
    assert replicas.min_worker_pods(ray_cluster.spec) == minimum
    assert replicas.max_worker_pods(ray_cluster.spec) == min(maximum, 2**31 - 1)


def test_gpu_and_tpu() -> None:
    data = instance_dict()
    data["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "1", "amd.com/gpu": "1", "google.com/tpu": "4"}
    }
    result = desired_resources(cluster(data))
    # Three replicas; GPUs of every vendor are summed.
    assert (result.gpu, result.tpu, result.cpu, result.memory) == ("6", "12", "1", "1Gi")


def test_a_quantity_beyond_the_bounds_counts_as_unreadable() -> None:
    # Before validation refuses it, a read pass computes the status from it: that must not stall.
    huge = [{"replicas": 2**31 - 1, "numOfHosts": 2**31 - 1, "template": _pod("1e400000", "1Ei")}]
    result = desired_resources(cluster(_cluster(huge)))
    assert result.cpu == "1"  # the head's; the workers' CPU cannot be read
    workers = parse_quantity("1Ei").times((2**31 - 1) ** 2)
    assert result.memory == str(workers + parse_quantity("100Mi"))
