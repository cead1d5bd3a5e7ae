"""The four processes the chaos suite kills, each restartable as a supervisor would restart it.

devcluster (simulated runtime, counting Ray submissions), the Temporal dev server (SQLite
file, so its state survives a kill), the worker and the bridge each run as their own child
process in their own session, so `kill -9` takes exactly one of them. Ports and state
directories stay the same across restarts, as a Service and a volume would keep them. A
process that exits on its own (not killed by us) is restarted after a second, as Kubernetes
restarts a crashed container; those exits are counted and reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from kuberay_temporal.binaries import temporal_cli
from kuberay_temporal.temporal_server import DevServerOptions, dev_server_command
from tests.chaos.counting_devcluster import LOG_ENV
from tests.chaos.lifecycles import LifecycleFailed, until
from tests.reference import REPO_ROOT
from tests.worker.ports import free_port
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


@dataclass
class Stack:
    """The four components and where they keep their state and logs."""

    root: Path
    components: dict[str, Supervised] = field(default_factory=dict)
    restarts: Counter[str] = field(default_factory=Counter)

    @property
    def kubeconfig(self) -> Path:
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
        python, base = sys.executable, dict(os.environ)
        self._temporal = DevServerOptions(
            state_dir=self.root / "temporal",
            port=free_port(),
            ui_port=free_port(),
            search_attributes=ALL_KEYS,
        )
        api_port = free_port()
        self.components["temporal"] = Supervised(
            "temporal",
            dev_server_command(temporal_cli(), self._temporal),
            base,
            self.root,
            lambda: _tcp_open(self._temporal.port),
        )
        self.components["devcluster"] = Supervised(
            "devcluster",
            [
                *(python, "-m", "tests.chaos.counting_devcluster"),
                *("--state-dir", str(self.root / "cluster"), "--port", str(api_port)),
                *("--runtime", "simulated", "--ready-delay", "0.5"),
            ],
            base | {LOG_ENV: str(self.submission_log)},
            self.root,
            lambda: _tcp_open(api_port),
        )
        for name in ("worker", "bridge"):
            self.components[name] = operator_component(
                name, self._temporal.address, self.kubeconfig, self.root
            )

    async def start(self) -> None:
        """Start everything in dependency order."""
        self._temporal.state_dir.mkdir(parents=True, exist_ok=True)
        for name in ("temporal", "devcluster"):
            await self.components[name].start()

    async def start_operator(self) -> None:
        """Start the worker and the bridge (the CRDs must be installed first)."""
        for name in ("worker", "bridge"):
            await self.components[name].start()

    async def kill_and_restart(self, name: str, down_for: float) -> None:
        """SIGKILL one component, leave it down for `down_for` s, start it again."""
        component = self.components[name]
        await component.kill()
        await asyncio.sleep(down_for)  # the outage itself, not a wait for anything
        await component.start(within=120)
        self.restarts[name] += 1

    async def stop(self) -> None:
        """Stop everything, operator first."""
        for name in ("bridge", "worker", "devcluster", "temporal"):
            if name in self.components:
                await self.components[name].stop()


def operator_component(
    name: str, temporal_address: str, kubeconfig: Path, log_dir: Path
) -> Supervised:
    """`kuberay-temporal worker` or `bridge` as its own process, ready when /readyz says so."""
    health = free_port()
    env = dict(os.environ) | {
        "TEMPORAL_ADDRESS": temporal_address,
        "KUBECONFIG": str(kubeconfig),
        "KUBERAY_TEMPORAL_HEALTH_PORT": str(health),
        "KUBERAY_TEMPORAL_RELIST_SECONDS": "30",
    }
    return Supervised(
        name, [sys.executable, "-m", "kuberay_temporal", name], env, log_dir, _healthy(health)
    )


async def _tcp_open(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
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
