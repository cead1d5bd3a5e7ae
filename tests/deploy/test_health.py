"""The probe endpoints: alive while the loop runs, ready only when the process says so, and
only on the address they are given."""

from __future__ import annotations

import asyncio

import aiohttp

from runtime.health import HealthServer, serving_health
from runtime.settings import LOOPBACK
from tests.listeners import OTHER_LOCAL_ADDRESS, refused


async def _get(port: int, path: str, address: str = LOOPBACK) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://{address}:{port}{path}") as response,
    ):
        return response.status


async def test_healthz_is_always_ok_and_readyz_follows_the_probe() -> None:
    ready = asyncio.Event()

    async def probe() -> bool:
        return ready.is_set()

    async with serving_health(0, probe, address=LOOPBACK) as server:
        assert isinstance(server, HealthServer) and server.port > 0
        assert await _get(server.port, "/healthz") == 200
        assert await _get(server.port, "/readyz") == 503
        ready.set()
        assert await _get(server.port, "/readyz") == 200


async def test_a_probe_that_raises_fails_readiness_but_not_liveness() -> None:
    async def broken() -> bool:
        raise RuntimeError("boom")

    async with serving_health(0, broken, address=LOOPBACK) as server:
        assert server is not None
        assert await _get(server.port, "/readyz") == 500  # aiohttp's answer to an exception
        assert await _get(server.port, "/healthz") == 200


async def test_no_port_serves_nothing() -> None:
    async def probe() -> bool:
        return True

    async with serving_health(None, probe, address=LOOPBACK) as server:
        assert server is None


async def test_the_server_listens_on_its_address_only() -> None:
    async def probe() -> bool:
        return True

    async with serving_health(0, probe, address=LOOPBACK) as server:
        assert server is not None
        assert await _get(server.port, "/healthz") == 200
        assert await refused(OTHER_LOCAL_ADDRESS, server.port)
    async with serving_health(0, probe, address=OTHER_LOCAL_ADDRESS) as server:
        assert server is not None
        assert await _get(server.port, "/healthz", OTHER_LOCAL_ADDRESS) == 200
