"""What the activity tests share: a devcluster with our CRDs and a client to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from activities.kube import client as kube
from activities.kube.client import KubeClient
from devcluster.server import DevCluster
from kuberay_temporal.crd_install import install_crds


@pytest_asyncio.fixture
async def client(tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A fresh devcluster (real API semantics, no pods run) with the ray.io CRDs installed."""
    async with DevCluster(tmp_path) as cluster:
        client = await kube.connect(str(cluster.kubeconfig_path))
        await install_crds(client)
        yield client
        await client.close()
