"""KubeRay's `--qps` and `--burst`: client-go's token buckets, one per API type, on a clock the
test moves."""

from __future__ import annotations

import httpx
import pytest

from activities.dashboard.access import DashboardAccess, DashboardConnector
from activities.kube import client as kube
from activities.kube import rate_limit
from activities.kube.client import KubeClient
from activities.kube.rate_limit import PROXY, RateLimits, TokenBucket, api_type_of
from crds.raycluster import RayCluster
from runtime.settings import Settings


class Clock:
    """`time.monotonic` and `asyncio.sleep` for the bucket: sleeping moves the clock."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        self.slept: list[float] = []
        monkeypatch.setattr(rate_limit.time, "monotonic", lambda: self.now)
        monkeypatch.setattr(rate_limit.asyncio, "sleep", self.sleep)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


async def test_a_burst_goes_at_once_then_requests_come_at_the_qps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock(monkeypatch)
    bucket = TokenBucket(qps=10, burst=3)
    for _ in range(3):
        await bucket.take()
    assert clock.slept == []
    await bucket.take()
    await bucket.take()
    assert clock.slept == [0.1, 0.1]


async def test_an_idle_bucket_fills_up_to_its_burst_only(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    bucket = TokenBucket(qps=10, burst=2)
    await bucket.take()
    await bucket.take()
    clock.now += 3600
    for _ in range(3):
        await bucket.take()
    assert clock.slept == [0.1]


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 5), (1, 0)])
def test_a_bucket_that_could_never_give_a_token_is_refused(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="qps > 0 and burst >= 1"):
        TokenBucket(qps=qps, burst=burst)


def test_the_settings_default_to_kuberays_flags() -> None:
    settings = Settings.from_env({})
    assert (settings.kube_api_qps, settings.kube_api_burst) == (100.0, 200)
    custom = Settings.from_env(
        {"KUBERAY_TEMPORAL_KUBE_API_QPS": "5.5", "KUBERAY_TEMPORAL_KUBE_API_BURST": "7"}
    )
    assert (custom.kube_api_qps, custom.kube_api_burst) == (5.5, 7)


async def test_each_api_type_has_a_bucket_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """As KubeRay's: controller-runtime gives each kind its client a token bucket of its own,
    so a burst of pod creations never holds up a status write."""
    clock = Clock(monkeypatch)
    limits = RateLimits(qps=10, burst=1)
    await limits.take("/pods")
    await limits.take("ray.io/rayclusters")
    assert clock.slept == []
    await limits.take("/pods")
    assert clock.slept == [0.1]


@pytest.mark.parametrize(
    ("path", "api_type"),
    [
        ("/api/v1/namespaces/a/pods", "/pods"),
        ("/api/v1/namespaces/a/pods/p/log", "/pods"),
        ("/apis/ray.io/v1/namespaces/a/rayclusters/c/status", "ray.io/rayclusters"),
        ("/apis/ray.io/v1/rayjobs", "ray.io/rayjobs"),
        ("/api/v1/namespaces/a", "/namespaces"),
        ("/api/v1/namespaces", "/namespaces"),
        ("/apis/batch/v1/namespaces/a/jobs?watch=1", "batch/jobs"),
        ("/version", "/version"),
    ],
)
def test_a_path_counts_for_its_api_type(path: str, api_type: str) -> None:
    assert api_type_of(path) == api_type


class Counting(RateLimits):
    def __init__(self) -> None:
        super().__init__(qps=1000, burst=1000)
        self.taken: list[str] = []

    async def take(self, api_type: str) -> None:
        self.taken.append(api_type)
        await super().take(api_type)


async def test_every_request_of_a_client_takes_a_token_of_its_api_type(
    client: KubeClient,
) -> None:
    limits = Counting()
    limited = KubeClient(client._api, None, limits)
    await limited.get_or_none(kube.CONFIGMAPS, "default", "absent")
    await limited.list_all(kube.PODS, "default")
    assert limits.taken == ["/configmaps", "/pods"]


async def test_a_dashboard_call_through_the_api_servers_proxy_takes_a_token_too(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call through the API server's proxy counts in the worker's --qps (KubeRay's do not, but
    its one reconcile loop asks one dashboard at a time); a direct call takes no token."""
    bucket = Counting()
    limited = KubeClient(client._api, None, bucket)
    cluster = RayCluster.model_validate(
        {
            "metadata": {"name": "c", "namespace": "default", "uid": "u-1"},
            "spec": {"headGroupSpec": {"template": {"spec": {"containers": []}}}},
        }
    )
    found = {"submission_id": "job-1", "status": "RUNNING", "entrypoint": "x", "type": "SUBMISSION"}

    def ray(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=found)

    async def base_url(cluster: RayCluster) -> str:
        return "http://head:8265"

    for access, taken in ((DashboardAccess.PROXY, [PROXY]), (DashboardAccess.DIRECT, [])):
        bucket.taken = []
        connector = DashboardConnector(limited, access, httpx.MockTransport(ray))
        monkeypatch.setattr(connector, "base_url", base_url)
        async with connector.open(cluster) as dashboard:
            assert (await dashboard.job_info("job-1")).status == "RUNNING"
        assert bucket.taken == taken, access
