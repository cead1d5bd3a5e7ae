"""A client-side limit on requests to the API server: client-go's token bucket.

KubeRay's operator sends at most `--qps` requests a second on average, in bursts of up to
`--burst` (100 and 200 by default); the worker and the bridge take the same two settings
(`KUBERAY_TEMPORAL_KUBE_API_QPS`, `KUBERAY_TEMPORAL_KUBE_API_BURST`), so a storm of passes
queues in the process instead of in the API server's priority and fairness queues.
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
