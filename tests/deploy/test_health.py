"""The probe endpoints: alive while the loop runs, ready only when the process says so."""

from __future__ import annotations

import asyncio

import aiohttp

from runtime.health import HealthServer, serving_health


async def _get(port: int, path: str) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status


async def test_healthz_is_always_ok_and_readyz_follows_the_probe() -> None:
    ready = asyncio.Event()

    async def probe() -> bool:
        return ready.is_set()

    async with serving_health(0, probe) as server:
        assert isinstance(server, HealthServer) and server.port > 0
        assert await _get(server.port, "/healthz") == 200
        assert await _get(server.port, "/readyz") == 503
        ready.set()
        assert await _get(server.port, "/readyz") == 200


async def test_a_probe_that_raises_fails_readiness_but_not_liveness() -> None:
    async def broken() -> bool:
        raise RuntimeError("boom")

    async with serving_health(0, broken) as server:
        assert server is not None
        assert await _get(server.port, "/readyz") == 500  # aiohttp's answer to an exception
        assert await _get(server.port, "/healthz") == 200


async def test_no_port_serves_nothing() -> None:
    async def probe() -> bool:
        return True

    async with serving_health(None, probe) as server:
        assert server is None
