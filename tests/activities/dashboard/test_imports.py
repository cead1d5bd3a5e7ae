"""A dashboard request imports nothing: httpcore's per-request `import sniffio` finds it loaded.

Without sniffio installed, that import failed on every request and searched the whole import
path each time (py-spy: about 2% of a worker's CPU under 200 RayJobs).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.abc
import json
import sys
from collections.abc import Sequence
from types import ModuleType

import httpx

from activities.dashboard import client as rd

INFO = {"submission_id": "s", "status": "RUNNING", "entrypoint": "python x.py"}


class Recorder(importlib.abc.MetaPathFinder):
    """Sees every import the interpreter has to look for (not one found in sys.modules)."""

    def __init__(self) -> None:
        self.sought: list[str] = []

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        self.sought.append(fullname)


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer every request on the connection with INFO, until the client hangs up."""
    body = json.dumps(INFO).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
    with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(head.encode() + b"\r\n\r\n" + body)
            await writer.drain()


async def test_a_dashboard_request_searches_for_no_module() -> None:
    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    recorder = Recorder()
    async with server, httpx.AsyncClient() as http:
        dashboard = rd.RayDashboardClient(http, f"http://127.0.0.1:{port}")
        await dashboard.job_info("s")  # the first request may load what it needs once
        sys.meta_path.insert(0, recorder)
        try:
            for _ in range(3):
                assert (await dashboard.job_info("s")).status == "RUNNING"
        finally:
            sys.meta_path.remove(recorder)
    assert recorder.sought == []
