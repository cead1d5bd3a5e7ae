"""KubeRay's `sampleyaml` RayCluster set on the local stack's simulated runtime.

KubeRay's own CI applies these sixteen samples and expects each RayCluster to become ready.
Here every sample is applied unchanged (each in its own namespace, with whatever else the
file holds: Redis Deployments, ConfigMaps, Secrets, Ingresses) and every RayCluster reaches
`ready` with the pod count its spec asks for. The simulated runtime marks pods Ready without
starting Ray, which is what lets all sixteen run on one machine; real Ray is covered by
`test_raycluster_real.py`.
"""

from __future__ import annotations

import json

import pytest

from crds.raycluster import RayCluster
from crds.replicas import desired_worker_pods
from tests.e2e.conftest import LocalStack
from tests.eventually import eventually
from tests.reference import KUBERAY_SAMPLES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SAMPLEYAML = [
    "autoscaler-v2",
    "autoscaler",
    "complete",
    "custom-head-service",
    "deprecate-gcs-ft",
    "persistent-redis",
    "embed-grafana",
    "external-redis-uri",
    "external-redis",
    "head-command",
    "overwrite-command",
    "py-spy",
    "sample",
    "separate-ingress",
    "tls",
    "fluentbit",
]


async def clusters_ready(stack: LocalStack) -> dict[str, str] | None:
    items = json.loads(await stack.kubectl("get", "rayclusters", "-A", "-o", "json"))["items"]
    states = {}
    for item in items:
        cluster = RayCluster.model_validate(item)
        status = item.get("status") or {}
        pods = json.loads(
            await stack.kubectl(
                "get",
                "pods",
                "-n",
                cluster.namespace,
                "-l",
                f"ray.io/cluster={cluster.name}",
                "-o",
                "json",
            )
        )["items"]
        complete = len(pods) == desired_worker_pods(cluster.spec) + 1
        states[f"{cluster.namespace}/{cluster.name}"] = (
            status.get("state", "") if complete else f"{len(pods)} pods"
        )
    done = len(states) == len(SAMPLEYAML) and all(s == "ready" for s in states.values())
    return states if done else None


async def test_every_sampleyaml_raycluster_becomes_ready(simulated_stack: LocalStack) -> None:
    stack = simulated_stack
    for sample in SAMPLEYAML:
        namespace = f"sample-{sample}"
        await stack.kubectl("create", "namespace", namespace)
        path = KUBERAY_SAMPLES / f"ray-cluster.{sample}.yaml"
        await stack.kubectl("apply", "--server-side", "-n", namespace, "-f", str(path))
    states = await eventually(
        lambda: clusters_ready(stack), within=300, message="all sixteen RayClusters ready"
    )
    assert len(states) == 16
