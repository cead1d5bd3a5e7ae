"""A client-side limit on requests to the API server: client-go's token bucket, one per API type.

KubeRay's operator takes `--qps` and `--burst` (100 and 200 by default) and sets them on its
manager's REST config without a shared rate limiter, so controller-runtime builds a REST client,
with a token bucket of its own, for each kind it reads or writes: pods, Services, RayClusters
(their status subresource included), RayJobs, Jobs... Each kind may send `--qps` requests a
second on average, in bursts of up to `--burst`. The worker and the bridge take the same two
settings (`KUBERAY_TEMPORAL_KUBE_API_QPS`, `KUBERAY_TEMPORAL_KUBE_API_BURST`) and the same
shape (`RateLimits`), so a storm of passes queues in the process instead of in the API server's
priority and fairness queues, and no more tightly than KubeRay's.
"""

from __future__ import annotations

import asyncio
import time

DEFAULT_QPS = 100.0
DEFAULT_BURST = 200


class TokenBucket:
    """`burst` tokens, refilled at `qps` a second; each request takes one, waiting if none.

    Waiters are served in order of arrival: each takes the next token as it comes, so a
    request never starves behind later ones.
    """

    def __init__(self, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("a token bucket needs qps > 0 and burst >= 1")
        self._qps = qps
        self._burst = burst
        self._tokens = float(burst)
        self._at = time.monotonic()
        self._turn = asyncio.Lock()

    async def take(self) -> None:
        """Take a token, after waiting for one if the bucket is empty."""
        async with self._turn:
            self._refill()
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self._qps)
                self._refill()
            self._tokens -= 1

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(float(self._burst), self._tokens + (now - self._at) * self._qps)
        self._at = now


PROXY = "services/proxy"
"""The API type of a dashboard call through the API server's service proxy (`pace`)."""


class RateLimits:
    """A `TokenBucket` of `qps` and `burst` for each API type, made when first asked for."""

    def __init__(self, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST) -> None:
        TokenBucket(qps, burst)  # refuses a bucket that could never give a token
        self._qps = qps
        self._burst = burst
        self._buckets: dict[str, TokenBucket] = {}

    async def take(self, api_type: str) -> None:
        """Take a token of `api_type`'s bucket (`api_type_of`), waiting if it is empty."""
        bucket = self._buckets.get(api_type)
        if bucket is None:
            bucket = self._buckets[api_type] = TokenBucket(self._qps, self._burst)
        await bucket.take()


def api_type_of(path: str) -> str:
    """The API type a request path addresses, as `<group>/<resource>`: one bucket each.

    `/api/v1/namespaces/a/pods/p/status` is `/pods`, `/apis/ray.io/v1/rayjobs` is
    `ray.io/rayjobs`, `/api/v1/namespaces/a` is `/namespaces`. A subresource counts with its
    resource, as it goes through the same controller-runtime client in KubeRay.
    """
    parts = [part for part in path.split("?", 1)[0].split("/") if part]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) > 2:
        group, rest = parts[1], parts[3:]
    else:
        return path  # discovery and the like: a bucket of their own
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]
    return f"{group}/{rest[0]}" if rest else group
