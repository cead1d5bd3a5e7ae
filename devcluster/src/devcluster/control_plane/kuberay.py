"""KubeRay's own operator as a process beside the control plane: the reference ours is held to.

It runs the binary `building` makes from KubeRay's source (v1.7.0), outside the node (so it
reaches Ray dashboards through the API server's service proxy, `--use-kubernetes-proxy`),
reconciling only the namespaces it is given, with v1.7.0's default feature gates unless told
otherwise (as ours is configured: `--feature-gates` in KubeRay's syntax). Leader election
is off (one replica), and its metrics and health endpoints listen on loopback ports of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp

from devcluster.control_plane.processes import stop_process
from devcluster.parent_death import die_with_parent
from devcluster.ports import free_port

_STOP_GRACE = 10.0
_READY_WITHIN = 120.0


def operator_args(
    kubeconfig: Path,
    namespaces: Sequence[str],
    metrics_port: int,
    probe_port: int,
    batch_scheduler: str = "",
    feature_gates: str = "",
) -> list[str]:
    """The operator's command-line flags (after the binary).

    `feature_gates`: gates set apart from v1.7.0's defaults (`RayCronJob=true,...`); empty,
    none, as a default install runs.
    """
    gate_args = [f"--feature-gates={feature_gates}"] if feature_gates else []
    scheduler = [f"--batch-scheduler={batch_scheduler}"] if batch_scheduler else []
    return [
        *scheduler,
        f"--kubeconfig={kubeconfig}",
        f"--watch-namespace={','.join(namespaces)}",
        "--use-kubernetes-proxy",
        f"--metrics-addr=127.0.0.1:{metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
        "--enable-leader-election=false",
        *gate_args,
        "--log-stdout-encoder=console",
    ]


class KubeRayOperator:
    """One `kuberay-operator` process, started on enter once ready, stopped on exit."""

    def __init__(
        self,
        binary: Path,
        kubeconfig: Path,
        namespaces: Sequence[str],
        log: Path,
        batch_scheduler: str = "",
        feature_gates: str = "",
    ):
        if not namespaces:
            # An empty --watch-namespace means every namespace: never what a side-by-side wants.
            raise ValueError("KubeRay's operator needs at least one namespace to reconcile")
        self.binary, self.kubeconfig, self.log = binary, kubeconfig, log
        self.namespaces = list(namespaces)
        self.batch_scheduler = batch_scheduler
        """KubeRay's `--batch-scheduler` (empty: none), to run as ours is configured."""
        self.feature_gates = feature_gates
        """KubeRay's `--feature-gates` (empty: v1.7.0's defaults), likewise."""
        self.metrics_port, self.probe_port = free_port(), free_port()
        self._process: asyncio.subprocess.Process | None = None

    @property
    def metrics_url(self) -> str:
        """Its Prometheus endpoint (controller-runtime's and KubeRay's series)."""
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    @property
    def pid(self) -> int | None:
        """The running process's id, None when it is not running."""
        process = self._process
        return process.pid if process is not None and process.returncode is None else None

    async def __aenter__(self) -> KubeRayOperator:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start the process and wait until its readiness endpoint answers 200."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        args = operator_args(
            self.kubeconfig,
            self.namespaces,
            self.metrics_port,
            self.probe_port,
            self.batch_scheduler,
            self.feature_gates,
        )
        with self.log.open("ab") as out:
            self._process = await asyncio.create_subprocess_exec(
                str(self.binary),
                *args,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
                env={**os.environ, "GOMAXPROCS": os.environ.get("GOMAXPROCS", "2")},
                start_new_session=True,  # Ctrl-C at the terminal is the stack's to handle
                preexec_fn=die_with_parent,
            )
        try:
            await self._ready()
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period; nothing if not running."""
        process, self._process = self._process, None
        if process is not None:
            await stop_process(process, _STOP_GRACE)

    async def exited(self) -> str:
        """Wait until the process exits on its own; say how, with where its log is."""
        if self._process is None:
            raise RuntimeError("KubeRay's operator was not started")
        code = await self._process.wait()
        return f"KubeRay's operator exited with {code} (see {self.log})"

    async def _ready(self) -> None:
        url = f"http://127.0.0.1:{self.probe_port}/readyz"
        deadline = time.monotonic() + _READY_WITHIN
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(5)) as http:
            while True:
                process = self._process
                if process is None or process.returncode is not None:
                    code = None if process is None else process.returncode
                    raise RuntimeError(f"KubeRay's operator exited with {code} (see {self.log})")
                with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
                    async with http.get(url) as answer:
                        if answer.status == 200:
                            return
                if time.monotonic() > deadline:
                    within = f"{_READY_WITHIN:.0f} s"
                    raise RuntimeError(f"KubeRay's operator not ready within {within} ({self.log})")
                await asyncio.sleep(0.2)
