"""The processes the chaos suite kills, each restartable as a supervisor would restart it.

The Temporal dev server (SQLite file, so its state survives a kill), the worker, the bridge
and the cluster each run as their own child process in their own session, so `kill -9`
takes exactly one of them. The cluster is either devcluster (simulated runtime, counting Ray
submissions) or a real control plane: then kube-apiserver is killed and restarted, and the
node (devcluster's kubelet, simulated runtime, counting) is a process of its own, and the
worker and the bridge run as deploy/'s ServiceAccounts. Ports and state directories stay the
same across restarts, as a Service and a volume would keep them. A process that exits on its
own (not killed by us) is restarted after a second, as Kubernetes restarts a crashed
container; those exits are counted and reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from devcluster.control_plane.processes import ControlPlane
from devcluster.kubelet import network
from devcluster.ports import free_port
from kuberay_temporal.binaries import temporal_cli
from kuberay_temporal.service_accounts import DASHBOARD_PROXY, deploy_identities
from kuberay_temporal.temporal_server import DevServerOptions, dev_server_command
from tests.chaos.counting_devcluster import LOG_ENV
from tests.chaos.lifecycles import LifecycleFailed, until
from tests.real_cluster import running_control_plane
from tests.reference import REPO_ROOT
from worker.search_attributes import ALL_KEYS

Probe = Callable[[], Awaitable[bool]]


@dataclass
class Supervised:
    """One component's process: started, killed with SIGKILL, restarted."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_dir: Path
    ready: Probe
    starts: int = 0
    crashes: int = 0
    process: asyncio.subprocess.Process | None = None
    _killing: bool = False

    async def start(self, within: float = 90.0) -> None:
        """Start the process and return once its readiness probe passes."""
        self.starts += 1
        with (self.log_dir / f"{self.name}.log").open("ab") as log:
            log.write(f"--- start {self.starts}\n".encode())
            log.flush()
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                env=self.env,
                cwd=REPO_ROOT,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        await until(self.ready, within, f"{self.name} ready", every=0.1)

    async def kill(self) -> None:
        """`kill -9`: no shutdown of any kind."""
        process = self.process
        assert process is not None
        self._killing = True
        try:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGKILL)
            await process.wait()
        finally:
            self._killing = False

    async def supervise(self) -> None:
        """Restart the process whenever it exits on its own (run as a task until cancelled)."""
        while True:
            process = self.process
            if process is None or process.returncode is not None or self._killing:
                await asyncio.sleep(0.5)
                continue
            await process.wait()
            if self._killing or self.process is not process:
                continue
            self.crashes += 1
            await asyncio.sleep(1.0)
            with contextlib.suppress(LifecycleFailed):
                await self.start()

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL after 30 s."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


KUBE_APISERVER = "kube-apiserver"


@dataclass
class Stack:
    """The components, where they keep their state and logs, and which of them are killed."""

    root: Path
    control_plane: str = "devcluster"
    """`devcluster`, or `kubernetes`: a real control plane with devcluster's node."""
    components: dict[str, Supervised] = field(default_factory=dict)
    restarts: Counter[str] = field(default_factory=Counter)
    plane: ControlPlane | None = None
    _resources: AsyncExitStack = field(default_factory=AsyncExitStack)

    @property
    def real(self) -> bool:
        return self.control_plane == "kubernetes"

    @property
    def targets(self) -> tuple[str, ...]:
        """What the suite kills."""
        if self.real:
            return ("worker", "bridge", "node", KUBE_APISERVER, "temporal")
        return ("worker", "bridge", "devcluster", "temporal")

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig."""
        if self.real:
            return self.root / "control-plane" / "kubeconfig"
        return self.root / "cluster" / "kubeconfig"

    @property
    def submission_log(self) -> Path:
        return self.root / "submissions.jsonl"

    @property
    def temporal_address(self) -> str:
        return self._temporal.address

    def build(self) -> None:
        """Choose ports and command lines (nothing is started)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._temporal = DevServerOptions(
            state_dir=self.root / "temporal",
            port=free_port(),
            ui_port=free_port(),
            search_attributes=ALL_KEYS,
        )
        self.components["temporal"] = Supervised(
            "temporal",
            dev_server_command(temporal_cli(), self._temporal),
            dict(os.environ),
            self.root,
            lambda: _tcp_open(self._temporal.port),
        )
        if not self.real:
            api_port = free_port()
            self.components["devcluster"] = self._counting(
                "devcluster",
                "tests.chaos.counting_devcluster",
                *("--state-dir", str(self.root / "cluster"), "--port", str(api_port)),
                *("--runtime", "simulated", "--ready-delay", "0.5"),
                ready=lambda: _tcp_open(api_port),
            )

    def _counting(self, name: str, module: str, *args: str, ready: Probe) -> Supervised:
        env = dict(os.environ) | {LOG_ENV: str(self.submission_log)}
        return Supervised(name, [sys.executable, "-m", module, *args], env, self.root, ready)

    async def start(self) -> None:
        """Start the cluster and Temporal (the CRDs come next, then `start_operator`)."""
        self._temporal.state_dir.mkdir(parents=True, exist_ok=True)
        await self.components["temporal"].start()
        if not self.real:
            await self.components["devcluster"].start()
            return
        self.plane = await self._resources.enter_async_context(
            running_control_plane(self.root / "control-plane", network.HOST_IP)
        )
        plane, kubelet_port = self.plane, free_port()
        self.components["node"] = node = self._counting(
            "node",
            "tests.chaos.counting_node",
            *("--api-url", plane.url, "--pki-dir", str(plane.certificates.dir)),
            *("--state-dir", str(self.root / "node"), "--kubelet-port", str(kubelet_port)),
            ready=lambda: _tcp_open(kubelet_port, network.HOST_IP),
        )
        await node.start()

    async def start_operator(self) -> None:
        """Start the worker and the bridge (the CRDs must be installed first)."""
        worker = bridge = self.kubeconfig
        if self.real:
            identities = await deploy_identities(
                self.kubeconfig, self.root / "identities", components=(DASHBOARD_PROXY,)
            )
            worker, bridge = identities.worker, identities.bridge
        for name, kubeconfig in (("worker", worker), ("bridge", bridge)):
            self.components[name] = operator_component(
                name, self._temporal.address, kubeconfig, self.root
            )
            await self.components[name].start()

    async def kill_and_restart(self, name: str, down_for: float) -> None:
        """SIGKILL one component, leave it down for `down_for` s, start it again."""
        if name == KUBE_APISERVER:
            assert self.plane is not None
            await self.plane.kill(name)
            await asyncio.sleep(down_for)  # the outage itself, not a wait for anything
            await self.plane.restart(name)
        else:
            component = self.components[name]
            await component.kill()
            await asyncio.sleep(down_for)
            await component.start(within=120)
        self.restarts[name] += 1

    async def stop(self) -> None:
        """Stop everything, operator first."""
        for name in ("bridge", "worker", "node", "devcluster", "temporal"):
            if name in self.components:
                await self.components[name].stop()
        await self._resources.aclose()


def operator_component(
    name: str, temporal_address: str, kubeconfig: Path, log_dir: Path
) -> Supervised:
    """`kuberay-temporal worker` or `bridge` as its own process, ready when /readyz says so."""
    health = free_port()
    env = dict(os.environ) | {
        "TEMPORAL_ADDRESS": temporal_address,
        "KUBECONFIG": str(kubeconfig),
        "KUBERAY_TEMPORAL_HEALTH_PORT": str(health),
    }
    return Supervised(
        name, [sys.executable, "-m", "kuberay_temporal", name], env, log_dir, _healthy(health)
    )


async def _tcp_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        _, writer = await asyncio.open_connection(host, port)
    except OSError:
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def _healthy(port: int) -> Probe:
    async def probe() -> bool:
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{port}/readyz") as response,
            ):
                return response.status == 200
        except aiohttp.ClientError:
            return False

    return probe
