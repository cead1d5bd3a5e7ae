"""The whole local stack (`kuberay-temporal dev`) as a subprocess, plus kubectl against it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import ssl
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
import yaml
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from crds.feature_gates import Gate
from devcluster.ports import free_port
from kuberay_temporal.binaries import kubectl
from tests.eventually import eventually
from tests.full_set import deselect_unless_asked


def gates_on(*gates: Gate) -> dict[str, str]:
    """A stack's environment turning `gates` on, as KubeRay's e2e installs it for such a test."""
    return {"KUBERAY_TEMPORAL_FEATURE_GATES": ",".join(f"{gate.value}=true" for gate in gates)}


@dataclass
class LocalStack:
    """A running `kuberay-temporal dev` and the ways to talk to it."""

    state_dir: Path
    kubeconfig: Path
    client: Client
    log: Path

    async def kubectl(self, *args: str, check: bool = True) -> str:
        process = await asyncio.create_subprocess_exec(
            str(kubectl()),
            f"--kubeconfig={self.kubeconfig}",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        if check and process.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {err.decode()}")
        return out.decode()

    def api_client(self) -> httpx.AsyncClient:
        """An HTTP client of the API server as the kubeconfig's user (TLS where it is served)."""
        config = yaml.safe_load(self.kubeconfig.read_text())
        server = str(config["clusters"][0]["cluster"]["server"])
        if not server.startswith("https://"):
            return httpx.AsyncClient(base_url=server)
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        context = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
        )
        pem = self.state_dir.parent / "admin-client.pem"  # ssl reads a key pair from a file only
        pem.touch(mode=0o600)
        pem.write_bytes(
            base64.b64decode(user["client-certificate-data"])
            + base64.b64decode(user["client-key-data"])
        )
        context.load_cert_chain(pem)
        return httpx.AsyncClient(base_url=server, verify=context)


@pytest_asyncio.fixture
async def local_stack(tmp_path: Path) -> AsyncIterator[LocalStack]:
    """The stack with real Ray: pods are processes, nodes of the real control plane."""
    async with running_stack(tmp_path, "process", control_plane="kubernetes") as stack:
        yield stack


@pytest_asyncio.fixture
async def simulated_stack(tmp_path: Path) -> AsyncIterator[LocalStack]:
    """The stack with devcluster's simulated runtime: pods turn Ready without processes."""
    async with running_stack(tmp_path, "simulated") as stack:
        yield stack


@contextlib.asynccontextmanager
async def running_stack(
    tmp_path: Path,
    runtime: str,
    env: Mapping[str, str] | None = None,
    control_plane: str = "devcluster",
    args: Sequence[str] = (),
) -> AsyncIterator[LocalStack]:
    """Run `kuberay-temporal dev` until the block ends, then stop it with Ctrl-C.

    `env` adds environment variables (settings) for the stack; `control_plane` is
    `devcluster` or `kubernetes` (a real control plane, built on first use, started anew);
    `args` are more options of `dev`.
    """
    state, log = tmp_path / "state", tmp_path / "dev.log"
    ports = [free_port() for _ in range(4)]
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kuberay_temporal",
            "dev",
            "--state-dir",
            str(state),
            "--temporal-port",
            str(ports[0]),
            "--ui-port",
            str(ports[1]),
            "--kube-port",
            str(ports[2]),
            "--runtime",
            runtime,
            "--control-plane",
            control_plane,
            "--kubelet-port",
            str(ports[3]),
            *args,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
    try:
        await eventually(
            lambda: b"Ctrl-C stops everything" in log.read_bytes() or process.returncode,
            within=60 if control_plane == "devcluster" else 240,
            message="the stack to come up",
        )
        assert process.returncode is None, log.read_text()
        client = await Client.connect(
            f"127.0.0.1:{ports[0]}", data_converter=pydantic_data_converter
        )
        yield LocalStack(state, state / "kubeconfig", client, log)
    except BaseException:
        # The stack's log is the only account of what it did; pytest shows what is printed.
        print(f"--- the end of {log} ---\n{_tail(log)}")
        raise
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(process.wait(), 60)
            except TimeoutError:
                process.kill()
                await process.wait()


def _tail(log: Path, lines: int = 400) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


REAL_SAMPLES = "KUBERAY_TEMPORAL_REAL_SAMPLES"
"""`all`: KubeRay's samples at full size with real Ray, the `full_set` tests of this folder."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_unless_asked(config, items, Path(__file__).parent, REAL_SAMPLES)
