"""The client's session: the proxy from the environment is used, ~/.netrc is not read.

A raw socket server stands in for the API server (and for a proxy): it records each request's
head and answers every one with the same Namespace.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from activities.kube import client as kube
from activities.kube.session import proxy_for

NAMESPACE = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}})


class Recorder:
    """An HTTP/1.1 server that keeps every request head it is sent."""

    def __init__(self) -> None:
        self.heads: list[str] = []
        self.port = 0

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.heads.append((await reader.readuntil(b"\r\n\r\n")).decode())
        body = NAMESPACE.encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()


@pytest.fixture
async def recorder() -> AsyncIterator[Recorder]:
    rec = Recorder()
    server = await asyncio.start_server(rec._answer, "127.0.0.1", 0)
    rec.port = server.sockets[0].getsockname()[1]
    async with server:
        yield rec


def kubeconfig(tmp_path: Path, server: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t0ken"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


async def read_namespace(config_file: str) -> kube.JSON:
    client = await kube.connect(config_file)
    try:
        return await client.get(kube.NAMESPACES, None, "a")
    finally:
        await client.close()


async def test_the_proxy_the_environment_names_carries_the_requests(
    recorder: Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{recorder.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    got = await read_namespace(kubeconfig(tmp_path, "http://api.example.test:8080"))
    assert got["metadata"]["name"] == "a"
    # A proxied request names the whole target URL.
    assert recorder.heads[0].startswith(
        "GET http://api.example.test:8080/api/v1/namespaces/a HTTP/1.1"
    )


async def test_netrc_gives_no_credentials_to_the_api_server(
    recorder: Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # aiohttp, trusting the environment, would send these as Basic auth on every request.
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    await read_namespace(kubeconfig(tmp_path, f"http://127.0.0.1:{recorder.port}"))
    head = recorder.heads[0].lower()
    assert "authorization: bearer t0ken" in head
    assert "basic" not in head


@pytest.mark.parametrize(
    ("env", "url", "expected"),
    [
        ({"HTTPS_PROXY": "http://p:3128"}, "https://10.0.0.1:6443", "http://p:3128"),
        ({"HTTPS_PROXY": "http://p:3128"}, "http://10.0.0.1:8080", None),
        ({"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "kube.local"}, "https://kube.local", None),
        ({"HTTPS_PROXY": "https://p:3128"}, "https://10.0.0.1:6443", None),
        ({}, "https://10.0.0.1:6443", None),
    ],
)
def test_proxy_for_follows_the_environment(
    env: dict[str, str], url: str, expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert proxy_for(url) == expected
