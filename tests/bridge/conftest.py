"""A devcluster with our CRDs, a real Temporal dev server, and a worker of stand-ins."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest_asyncio
import yaml
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.kube import client as kube
from activities.kube.client import KubeClient
from devcluster.server import DevCluster
from tests.bridge.standin import STAND_INS
from tests.reference import REPO_ROOT
from worker.running import build_workflow_runner

CRDS = sorted((REPO_ROOT / "deploy" / "crds").glob("*.yaml"))
CRD_RESOURCE = kube.Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", False)


@dataclass
class Stack:
    """What a bridge test talks to."""

    cluster: DevCluster
    kube: KubeClient
    env: WorkflowEnvironment
    task_queue: str

    async def create_cluster(self, name: str, namespace: str = "default", **spec: Any) -> Any:
        body = {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": []}}},
                **spec,
            },
        }
        return await self.kube.create(kube.RAYCLUSTERS, namespace, body)

    async def bump(self, name: str, replicas: int, namespace: str = "default") -> None:
        patch = {"spec": {"rayVersion": f"2.{replicas}.0"}}
        await self.kube.patch(kube.RAYCLUSTERS, namespace, name, patch)


async def install_crds(client: KubeClient) -> None:
    for path in CRDS:
        crd = yaml.safe_load(path.read_text())
        await client.create_or_get(CRD_RESOURCE, None, crd)


@pytest_asyncio.fixture
async def devcluster(tmp_path: Path, request: Any) -> AsyncIterator[DevCluster]:
    params = getattr(request, "param", {}) or {}
    async with DevCluster(tmp_path / "cluster", **params) as cluster:
        yield cluster


@pytest_asyncio.fixture
async def stack(devcluster: DevCluster, local_env: WorkflowEnvironment) -> AsyncIterator[Stack]:
    client = await kube.connect(str(devcluster.kubeconfig_path))
    await install_crds(client)
    queue = f"bridge-{uuid.uuid4()}"
    async with Worker(
        local_env.client,
        task_queue=queue,
        workflows=STAND_INS,
        workflow_runner=build_workflow_runner(),
    ):
        yield Stack(devcluster, client, local_env, queue)
    await client.close()
