"""The API server's pod-facing TLS identity and the env in-cluster clients read."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

from aiohttp import web

from devcluster.pod_api import PodApi, server_tls


def test_env_is_what_a_kubelet_sets_for_the_kubernetes_service() -> None:
    env = PodApi("10.244.0.1", 6443, b"").env()
    assert env["KUBERNETES_SERVICE_HOST"] == "10.244.0.1"
    assert env["KUBERNETES_SERVICE_PORT"] == env["KUBERNETES_SERVICE_PORT_HTTPS"] == "6443"
    assert env["KUBERNETES_PORT"] == "tcp://10.244.0.1:6443"
    assert env["KUBERNETES_PORT_6443_TCP_ADDR"] == "10.244.0.1"


async def test_clients_verify_the_server_with_the_ca_alone(tmp_path: Path) -> None:
    # 127.0.0.1 stands in for the bridge address: the certificate names whatever host it is for.
    context, ca_crt = server_tls(tmp_path / "pki", "127.0.0.1")
    _, same_ca = server_tls(tmp_path / "pki", "127.0.0.1")  # reused, not regenerated
    assert same_ca == ca_crt and b"BEGIN CERTIFICATE" in ca_crt
    app = web.Application()
    app.router.add_get("/version", lambda _: web.json_response({"ok": True}))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    try:
        client = ssl.create_default_context(cadata=ca_crt.decode())
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client)
        writer.write(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        response = await reader.read()
        writer.close()
        assert response.startswith(b"HTTP/1.1 200") and b'"ok": true' in response
    finally:
        await runner.cleanup()
