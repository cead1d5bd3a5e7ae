"""The Kubernetes client repeats what the server asks to repeat, as client-go does.

Found by the fault suite: a snapshot read makes a dozen requests, and one 429 anywhere failed
the whole activity; at a 20 % fault rate one RayJob needed 15 attempts (5 minutes of
back-off) to read its snapshot. client-go repeats a 429, or a 5xx with Retry-After, up to 10
times, waiting what Retry-After says; so does `KubeClient` now.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.kube import client as kube
from activities.kube.errors import KubeUnavailable
from devcluster.faults import Faults
from devcluster.server import DevCluster


@pytest.mark.parametrize(
    ("status", "headers", "wait"),
    [
        (429, {"Retry-After": "1"}, 1.0),
        (503, {"Retry-After": "2"}, 2.0),
        (429, {"Retry-After": "3600"}, kube.MAX_RETRY_AFTER),
        (429, {}, None),  # client-go too repeats only what says when
        (500, {}, None),
        (409, {"Retry-After": "1"}, None),
        (429, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, None),
    ],
)
def test_retry_after(status: int, headers: dict[str, str], wait: float | None) -> None:
    assert kube.retry_after(status, headers) == wait


async def test_429s_are_repeated_and_500s_are_not(tmp_path: Path) -> None:
    faults = Faults.from_data({"seed": 1, "rules": [{"verbs": ["get"], "share": 0.3, "code": 429}]})
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    async with DevCluster(tmp_path, faults=faults) as cluster:
        client = await kube.connect(str(cluster.kubeconfig_path))
        try:
            await client.create(kube.CONFIGMAPS, "default", body)
            for _ in range(8):
                got = await client.get(kube.CONFIGMAPS, "default", "c")
                assert got["metadata"]["name"] == "c"
            assert faults.counts["429"] > 0
            faults.rules = Faults.from_data({"rules": [{"verbs": ["get"], "code": 500}]}).rules
            with pytest.raises(KubeUnavailable, match="500"):
                await client.get(kube.CONFIGMAPS, "default", "c")
        finally:
            await client.close()
