"""The RayCluster KubeRay's own `pod_test.go` builds everything from, as our model."""

from __future__ import annotations

import copy
from typing import Any

from crds.raycluster import RayCluster

INSTANCE: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": {"name": "raycluster-sample", "namespace": "default", "uid": "uid-1234"},
    "spec": {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {
                "metadata": {"namespace": "default"},
                "spec": {
                    "containers": [
                        {
                            "name": "ray-head",
                            "image": "repo/image:custom",
                            "env": [{"name": "TEST_ENV_NAME", "value": "TEST_ENV_VALUE"}],
                            "resources": {
                                "requests": {"cpu": "1", "memory": "1Gi"},
                                "limits": {"cpu": "1", "memory": "1Gi"},
                            },
                        }
                    ]
                },
            },
        },
        "workerGroupSpecs": [
            {
                "replicas": 3,
                "minReplicas": 0,
                "maxReplicas": 10000,
                "groupName": "small-group",
                "rayStartParams": {"port": "6379"},
                "template": {
                    "metadata": {"namespace": "default"},
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-worker",
                                "image": "repo/image:custom",
                                "resources": {
                                    "limits": {
                                        "cpu": "1",
                                        "memory": "1Gi",
                                        "nvidia.com/gpu": "3",
                                    }
                                },
                                "env": [{"name": "TEST_ENV_NAME", "value": "TEST_ENV_VALUE"}],
                            }
                        ]
                    },
                },
            }
        ],
    },
}

HEAD_POD = "raycluster-sample-head-abcde"
WORKER_POD = "raycluster-sample-small-group-worker-abcde"
FQDN = "raycluster-sample-head-svc.default.svc.cluster.local"


def instance_dict() -> dict[str, Any]:
    """A fresh copy of the test cluster as JSON, for tests to edit."""
    return copy.deepcopy(INSTANCE)


def cluster(data: dict[str, Any] | None = None) -> RayCluster:
    """The test cluster (or an edited copy) as a model."""
    return RayCluster.model_validate(data if data is not None else instance_dict())


def head_container(doc: dict[str, Any]) -> dict[str, Any]:
    """The Ray container of the head template in a cluster dict."""
    return doc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def worker_container(doc: dict[str, Any]) -> dict[str, Any]:
    """The Ray container of the first worker group template in a cluster dict."""
    return doc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    """name → value (or the valueFrom object) of a container's env."""
    return {v["name"]: v.get("value", v.get("valueFrom")) for v in container.get("env") or []}
