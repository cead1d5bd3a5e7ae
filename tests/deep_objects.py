"""An API server that serves objects nested deeper than devcluster can hold.

Kubernetes keeps JSON nested up to 10,000 levels (Go's encoding/json limit), and a CR's pod
template keeps whatever it is given. devcluster, being Python, refuses a body nested past
about 900 levels. So a test stores a CR holding `PLACEHOLDER` as a string value, and reaches
devcluster through `deepening_proxy`, which sends every answer and watch line with that string
replaced by a value nested `levels` deep: what a real API server would send for such a CR.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from aiohttp import web

from devcluster.server import kubeconfig

PLACEHOLDER = "nested-deeply-here"
_FORWARDED = ("accept", "content-type")


def nested(levels: int) -> str:
    """JSON text of mappings nested `levels` deep (`{"a":{"a":…{}}}`)."""
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


@contextlib.asynccontextmanager
async def deepening_proxy(upstream: str, state: Path, levels: int = 2000) -> AsyncIterator[Path]:
    """Serve the API at `upstream` with `PLACEHOLDER` nested `levels` deep.

    Yields:
        A kubeconfig file for the proxy (written under `state`).
    """
    marker, deep = json.dumps(PLACEHOLDER).encode(), nested(levels).encode()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as session:

        async def forward(request: web.Request) -> web.StreamResponse:
            headers = {k: v for k, v in request.headers.items() if k.lower() in _FORWARDED}
            async with session.request(
                request.method,
                upstream + request.path_qs,
                data=await request.read(),
                headers=headers,
            ) as answer:
                content_type = answer.headers.get("Content-Type", "application/json")
                response = web.StreamResponse(
                    status=answer.status, headers={"Content-Type": content_type}
                )
                await response.prepare(request)
                with contextlib.suppress(ConnectionResetError):  # the client stopped watching
                    async for line in answer.content:  # a watch sends one event per line
                        await response.write(line.replace(marker, deep))
                    await response.write_eof()
                return response

        app = web.Application()
        app.router.add_route("*", "/{path:.*}", forward)
        runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            path = state / "deepening-kubeconfig.yaml"
            path.write_text(kubeconfig(f"http://127.0.0.1:{runner.addresses[0][1]}"))
            yield path
        finally:
            await runner.cleanup()
