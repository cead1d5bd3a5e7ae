"""Installing the CRDs rides out a busy or failing API server (found by the fault suite)."""

from __future__ import annotations

from pathlib import Path

from activities.kube import client as kube
from devcluster.faults import Faults
from devcluster.server import DevCluster
from kuberay_temporal.crd_install import CRDS, install_crds


async def test_install_retries_429s_500s_and_conflicts(tmp_path: Path) -> None:
    faults = Faults.from_data(
        {
            "seed": 2,
            "rules": [
                {"resources": ["customresourcedefinitions"], "share": 0.3, "code": 429},
                {"resources": ["customresourcedefinitions"], "share": 0.2, "code": 500},
                {"verbs": ["update"], "share": 0.3, "code": 409},
            ],
        }
    )
    async with DevCluster(tmp_path, faults=faults) as cluster:
        client = await kube.connect(str(cluster.kubeconfig_path))
        try:
            first = await install_crds(client, pause=0.01)
            again = await install_crds(client, pause=0.01)  # replaces: updates meet 409s
            installed = {c["metadata"]["name"] for c in await client.list_all(CRDS, None)}
        finally:
            await client.close()
    assert first == again and set(first) <= installed
    assert {"429", "500", "409"} <= set(faults.counts)
