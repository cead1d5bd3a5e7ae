"""Dashboard faults for reliability tests: simulated heads that fail some of the operator's calls.

With a `DashboardFaults` policy, a seeded share (`rate`) of the dashboard requests that come
through the API server's proxy (they carry `X-Forwarded-For`, as kube-apiserver's proxy adds)
fail in one of three ways a real head fails, split evenly:

* `500`: an internal error, the request not carried out;
* `timeout`: the request is carried out but the answer comes `slow_seconds` late, beyond the
  operator's client timeout (a submission that "failed" but happened);
* `refused`: the connection is dropped unanswered, as a head that is down or restarting; the
  API server's proxy turns that into a 503, as kube-apiserver does.

The simulated `ray job submit` containers dial the head directly and are never hit: how Ray's
own CLI copes with faults is Ray's business, not the operator's. Every fault is counted.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

KINDS = ("500", "timeout", "refused")
FORWARDED = "X-Forwarded-For"


@dataclass
class DashboardFaults:
    """How often simulated dashboards fail proxied requests, and the count of each fault."""

    rate: float = 0.0
    seed: int | None = None
    slow_seconds: float = 12.0
    """Longer than the operator's 10 s client timeout through the proxy."""
    counts: Counter[str] = field(default_factory=Counter)
    requests: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"dashboard fault rate must be within [0, 1], not {self.rate}")
        self._random = random.Random(self.seed)

    def pick(self) -> str | None:
        """Draw the fault for one request: one of `KINDS`, or None."""
        self.requests += 1
        draw = self._random.random()
        if draw >= self.rate:
            return None
        return KINDS[min(int(draw / self.rate * len(KINDS)), len(KINDS) - 1)]

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Apply the drawn fault, if any, to a proxied request."""
        if not self.rate or FORWARDED not in request.headers:
            response: web.StreamResponse = await handler(request)
            return response
        fault = self.pick()
        if fault is not None:
            self.counts[fault] += 1
        if fault == "500":
            return web.Response(status=500, text="simulated dashboard fault: internal error")
        if fault == "refused":
            if request.transport is not None:
                request.transport.abort()
            # Never sent: aiohttp finds the connection gone and drops the answer quietly.
            return web.Response(status=503)
        response = await handler(request)
        if fault == "timeout":
            await asyncio.sleep(self.slow_seconds)
        return response

    def snapshot(self) -> dict[str, int]:
        """The counts so far, with the number of requests considered."""
        return {"requests": self.requests, **{k: self.counts[k] for k in KINDS}}
