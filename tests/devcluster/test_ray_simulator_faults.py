"""Dashboard faults: a simulated head fails a share of the operator's (proxied) calls."""

from __future__ import annotations

import time

import aiohttp
import pytest

from devcluster.ray_simulator.dashboard import SimulatedHead
from devcluster.ray_simulator.faults import FORWARDED, DashboardFaults

JOB = {"entrypoint": "sleep 1", "submission_id": "once"}


def test_the_rate_is_split_between_the_three_faults() -> None:
    faults = DashboardFaults(rate=0.2, seed=11)
    drawn = [faults.pick() for _ in range(3000)]
    hits = [d for d in drawn if d is not None]
    assert 450 <= len(hits) <= 750
    assert {kind: hits.count(kind) > 100 for kind in ("500", "timeout", "refused")} == {
        "500": True,
        "timeout": True,
        "refused": True,
    }
    with pytest.raises(ValueError, match="within"):
        DashboardFaults(rate=2)


async def test_proxied_calls_fail_and_direct_ones_do_not() -> None:
    faults = DashboardFaults(rate=1.0, seed=3, slow_seconds=0.3)
    head = SimulatedHead(faults=faults)
    port = await head.start()
    url = f"http://127.0.0.1:{port}"
    seen: set[str] = set()
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(30):
                async with session.get(url + "/api/version") as response:
                    assert response.status == 200  # the submitter's way in: never hit
                started = time.monotonic()
                try:
                    async with session.post(
                        url + "/api/jobs/", json=JOB, headers={FORWARDED: "127.0.0.1"}
                    ) as response:
                        await response.read()
                        if response.status == 500 and "simulated dashboard fault" in (
                            await response.text()
                        ):
                            seen.add("500")
                        else:
                            assert time.monotonic() - started >= 0.3
                            seen.add("timeout")
                except aiohttp.ClientError:
                    seen.add("refused")
    finally:
        await head.stop()
    assert seen == {"500", "timeout", "refused"}
    assert sum(faults.counts.values()) == 30 == faults.requests
    # A slow answer is still carried out: the job exists once, whatever the retries.
    assert list(head.jobs) == ["once"]
