"""Fixtures for devcluster tests: a running devcluster, kubectl against it, an API client.

The server runs in the test event loop, so kubectl runs as an asyncio subprocess: a
blocking `subprocess.run` would stop the very server it talks to.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from kubernetes_asyncio import client, config

from devcluster.server import DevCluster
from tests.reference import KUBERAY_CRDS, REPO_ROOT

OUR_CRDS = REPO_ROOT / "deploy" / "crds"
KUBECTL = REPO_ROOT / ".venv" / "bin" / "kubectl"


@dataclass
class Result:
    """What a kubectl run printed and returned."""

    code: int
    out: str
    err: str


class Kubectl:
    """Runs the real kubectl against one devcluster."""

    def __init__(self, kubeconfig: Path, cache_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir

    async def run(self, *args: str, stdin: str | None = None, seconds: float = 60) -> Result:
        binary = os.environ.get("KUBECTL", str(KUBECTL))
        process = await asyncio.create_subprocess_exec(
            binary,
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.cache_dir}",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(
            process.communicate(stdin.encode() if stdin else None), seconds
        )
        assert process.returncode is not None
        return Result(process.returncode, out.decode(), err.decode())

    async def ok(self, *args: str, stdin: str | None = None) -> str:
        result = await self.run(*args, stdin=stdin)
        assert result.code == 0, f"kubectl {' '.join(args)} failed: {result.err}"
        return result.out

    def start(self, *args: str) -> asyncio.Task[Result]:
        """Run kubectl in the background (for `wait`)."""
        return asyncio.create_task(self.run(*args))

    async def stream(self, *args: str) -> asyncio.subprocess.Process:
        """Start a long-running kubectl (`get -w`) whose output is read line by line."""
        binary = os.environ.get("KUBECTL", str(KUBECTL))
        return await asyncio.create_subprocess_exec(
            binary,
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.cache_dir}",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )


async def read_lines_until(
    process: asyncio.subprocess.Process, wanted: str, seconds: float = 20
) -> list[str]:
    """Read a streaming kubectl's output until a line contains `wanted`, then stop it."""
    lines: list[str] = []
    assert process.stdout is not None

    async def read() -> None:
        while line := await process.stdout.readline():  # type: ignore[union-attr]
            lines.append(line.decode())
            if wanted in lines[-1]:
                return
        raise AssertionError(f"stream ended before {wanted!r}: {lines}")

    try:
        await asyncio.wait_for(read(), seconds)
    finally:
        process.kill()
        await process.wait()
    return lines


@pytest_asyncio.fixture(scope="session")
async def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DevCluster]:
    """One devcluster for tests that isolate themselves by namespace."""
    cluster = DevCluster(tmp_path_factory.mktemp("devcluster"), bookmark_interval=0.2)
    await cluster.start()
    yield cluster
    await cluster.stop()


@pytest.fixture(scope="session")
def kubectl(shared_cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    return Kubectl(shared_cluster.kubeconfig_path, tmp_path_factory.mktemp("kubectl-cache"))


@pytest_asyncio.fixture(scope="session")
async def api(shared_cluster: DevCluster) -> AsyncIterator[client.ApiClient]:
    api_client_ = await api_client(shared_cluster)
    yield api_client_
    await api_client_.close()


async def api_client(cluster: DevCluster) -> client.ApiClient:
    """Return a kubernetes_asyncio client configured from the cluster's kubeconfig."""
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(cluster.kubeconfig_path), client_configuration=configuration
    )
    return client.ApiClient(configuration)


@pytest_asyncio.fixture
async def namespace(api: client.ApiClient) -> str:
    """A fresh namespace per test."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    body = {"metadata": {"name": name}}
    await client.CoreV1Api(api).create_namespace(body)
    return name


@pytest_asyncio.fixture(scope="session")
async def ray_crds(kubectl: Kubectl) -> list[str]:
    """KubeRay's CRDs (and ours, once generated), installed in the shared cluster."""
    files = sorted(KUBERAY_CRDS.glob("*.yaml"))
    assert files, f"KubeRay CRDs not found under {KUBERAY_CRDS}; set KUBERAY_SHARED_DIR"
    for path in files:
        await kubectl.ok("apply", "--server-side", "-f", str(path))
    ours = sorted(OUR_CRDS.glob("*.yaml")) if OUR_CRDS.is_dir() else []
    for path in ours:
        await kubectl.ok("apply", "--server-side", "--force-conflicts", "-f", str(path))
    return [p.name for p in files + ours]
