"""A real control plane on the pod bridge, devcluster's kubelet as its node, kubectl as admin.

The control plane binds the bridge address, as `kuberay-temporal dev --control-plane
kubernetes` runs it, so pods of the process runtime reach it through the `kubernetes`
Service. One control plane serves the whole session; each test module runs one node (the node
is always `devcluster`), and each test works in a namespace of its own that is deleted, pods
and all, before the next test starts.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from devcluster.control_plane.processes import ControlPlane
from devcluster.kubelet import network
from devcluster.node import NodeAgent, NodeConfig
from tests.devcluster.conftest import Kubectl
from tests.eventually import eventually
from tests.real_cluster import running_control_plane

JsonObject = dict[str, Any]


@pytest_asyncio.fixture(scope="session")
async def bridged_control_plane(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[ControlPlane]:
    """etcd, kube-apiserver (on 10.244.0.1), kube-controller-manager, kube-scheduler."""
    state = tmp_path_factory.mktemp("bridged-control-plane")
    async with running_control_plane(state, address=network.HOST_IP) as plane:
        yield plane


@asynccontextmanager
async def running_node(
    plane: ControlPlane, state_dir: Path, runtime: str
) -> AsyncIterator[NodeAgent]:
    """A node of `plane` with this runtime, its kubelet API on a free port."""
    config = NodeConfig(
        api_url=plane.url,
        pki_dir=plane.certificates.dir,
        state_dir=state_dir,
        runtime=runtime,
        kubelet_port=0,
        backoff=1.0,
    )
    async with NodeAgent(config) as agent:
        yield agent


@pytest.fixture(scope="session")
def admin(bridged_control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    """kubectl with the control plane's admin kubeconfig."""
    return Kubectl(bridged_control_plane.kubeconfig_path, tmp_path_factory.mktemp("kubectl"))


@pytest_asyncio.fixture
async def namespace(admin: Kubectl) -> AsyncIterator[str]:
    """A fresh namespace, deleted with everything in it (the node finishing its pods)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    await admin.ok("create", "namespace", name)
    await eventually(
        lambda: _has_default_account(admin, name), within=30, message="the default account"
    )
    yield name
    await admin.ok("delete", "namespace", name, "--wait=true", "--timeout=90s")


async def _has_default_account(admin: Kubectl, namespace: str) -> bool:
    found = await admin.run("get", "serviceaccount", "default", "-n", namespace)
    return found.code == 0


async def pod_statuses(admin: Kubectl, namespace: str) -> dict[str, str]:
    """Pod name -> the STATUS column of `kubectl get pods`."""
    out = await admin.ok("get", "pods", "-n", namespace, "--no-headers")
    return {line.split()[0]: line.split()[2] for line in out.splitlines() if line.strip()}


async def get_json(admin: Kubectl, *args: str) -> JsonObject:
    """`kubectl get ... -o json`, decoded."""
    found: JsonObject = json.loads(await admin.ok("get", *args, "-o", "json"))
    return found
