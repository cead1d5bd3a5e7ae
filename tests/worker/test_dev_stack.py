"""The dev stack starts components in order and stops them in reverse, however it ends."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import cast

import httpx
import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.kube.client import KubeClient
from bridge.running import Bridge
from bridge.targets import RAYJOB
from devcluster.ports import free_port
from kuberay_temporal.dev import run_stack
from kuberay_temporal.dev_stack import Component, DevStack, run_bridge, run_worker
from kuberay_temporal.temporal_server import DevServerOptions
from runtime.prometheus import build_telemetry
from runtime.settings import LOOPBACK, Settings
from runtime.temporal_client import connect
from tests.listeners import OTHER_LOCAL_ADDRESS, refused


def recording(
    name: str, events: list[str], then: Callable[[DevStack], None] = lambda stack: None
) -> Component:
    @asynccontextmanager
    async def run(stack: DevStack) -> AsyncIterator[None]:
        events.append(f"start {name}")
        stack.running.append(name)
        then(stack)
        try:
            yield
        finally:
            events.append(f"stop {name}")

    factory: Callable[[DevStack], AbstractAsyncContextManager[None]] = run
    return Component(name, factory)


def _send_sigint(stack: DevStack) -> None:
    os.kill(os.getpid(), signal.SIGINT)


async def test_signal_stops_components_in_reverse_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events: list[str] = []
    components = [
        recording("server", events),
        recording("cluster", events),
        recording("worker", events, then=_send_sigint),
    ]

    code = await run_stack(DevServerOptions(state_dir=tmp_path), Settings(), components)

    assert code == 0
    assert events == [
        "start server",
        "start cluster",
        "start worker",
        "stop worker",
        "stop cluster",
        "stop server",
    ]
    assert "  worker" in capsys.readouterr().out


async def test_component_failure_stops_the_stack_with_code_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events: list[str] = []
    components = [
        recording("server", events),
        recording("worker", events, then=lambda stack: stack.fail("server died")),
    ]

    code = await run_stack(DevServerOptions(state_dir=tmp_path), Settings(), components)

    assert code == 1
    assert events[-2:] == ["stop worker", "stop server"]
    assert "server died" in capsys.readouterr().err


async def test_stop_during_start_up_skips_the_remaining_components(tmp_path: Path) -> None:
    events: list[str] = []
    components = [
        recording("server", events, then=lambda stack: stack.stop.set()),
        recording("worker", events),
    ]

    code = await run_stack(DevServerOptions(state_dir=tmp_path), Settings(), components)

    assert code == 0
    assert events == ["start server", "stop server"]


async def test_dev_with_a_taken_port_exits_1_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kuberay_temporal",
            "dev",
            "--state-dir",
            str(tmp_path),
            "--temporal-port",
            str(taken),
            "--ui-port",
            str(free_port()),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, stderr = await asyncio.wait_for(process.communicate(), 60)

    assert process.returncode == 1
    assert stderr.decode().splitlines() == [
        f"kuberay-temporal dev: cannot start the Temporal dev server: gRPC port "
        f"127.0.0.1:{taken} is already in use (Address already in use); stop what holds it "
        "or choose another port"
    ]


def _bridges_started(monkeypatch: pytest.MonkeyPatch) -> list[Bridge]:
    """The bridges `run_bridge` starts from now on; each runs at once and lists nothing."""
    started: list[Bridge] = []

    async def run(self: Bridge) -> None:
        started.append(self)

    async def listed(self: Bridge) -> None:
        return None

    monkeypatch.setattr(Bridge, "run", run)
    monkeypatch.setattr(Bridge, "wait_listed", listed)
    return started


async def test_the_dev_bridge_leaves_the_ignored_namespaces_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _bridges_started(monkeypatch)
    settings = Settings.model_validate(
        {"KUBERAY_TEMPORAL_WATCH_NAMESPACES": "a,kr", "KUBERAY_TEMPORAL_IGNORE_NAMESPACES": "kr"}
    )
    stack = DevStack(DevServerOptions(state_dir=tmp_path), settings)
    stack.kube, stack.client = cast(KubeClient, object()), cast(Client, object())

    async with run_bridge(stack):
        await asyncio.sleep(0)  # the bridge's task runs once

    (bridge,) = started
    assert list(bridge.namespaces) == ["a", "kr"] and bridge.ignored == {"kr"}
    assert stack.running == ["bridge    watching ray.io CRs in a, kr but kr"]


async def test_the_dev_bridge_keeps_the_state_gauges_the_worker_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _bridges_started(monkeypatch)
    stack = DevStack(DevServerOptions(state_dir=tmp_path), Settings())
    stack.kube, stack.client = cast(KubeClient, object()), cast(Client, object())

    async with run_bridge(stack):
        await asyncio.sleep(0)  # the bridge's task runs once

    (bridge,) = started
    assert bridge.gauges is stack.gauges


async def _dev_refuses(tmp_path: Path, *args: str) -> tuple[int | None, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        "dev",
        "--state-dir",
        str(tmp_path),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode, stderr.decode()


async def test_kuberay_beside_ours_needs_a_real_control_plane(tmp_path: Path) -> None:
    code, stderr = await _dev_refuses(tmp_path, "--kuberay-namespace", "kr")

    assert code == 2
    assert stderr.splitlines() == [
        "kuberay-temporal dev: invalid --kuberay-namespace: KubeRay's operator needs a real "
        "API server; add --control-plane kubernetes"
    ]
    assert not (tmp_path / "kubernetes").exists()  # refused before anything started


async def test_kuberay_namespace_must_be_a_namespace_name(tmp_path: Path) -> None:
    args = ("--control-plane", "kubernetes", "--kuberay-namespace", "Their_NS")

    code, stderr = await _dev_refuses(tmp_path, *args)

    assert code == 2
    assert stderr.splitlines() == [
        "kuberay-temporal dev: invalid --kuberay-namespace: must be lower-case letters, "
        "digits and '-', starting and ending with a letter or digit"
    ]


async def test_the_dev_worker_serves_the_bridges_gauges_on_loopback_only(
    tmp_path: Path, local_env: WorkflowEnvironment, task_queue: str
) -> None:
    """`/metrics` names every CR: the local stack keeps it on this machine unless told."""
    target = local_env.client.service_client.config.target_host
    settings = Settings(temporal_address=target, task_queue=task_queue, metrics_port=0)
    stack = DevStack(DevServerOptions(state_dir=tmp_path), settings)
    stack.telemetry = build_telemetry(0)
    stack.client = await connect(settings, stack.telemetry.runtime)
    job = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}, "status": {}}
    stack.gauges.observe(RAYJOB, "ADDED", job)

    async with run_worker(stack), httpx.AsyncClient() as http:
        (url,) = [line.split()[-1] for line in stack.running if line.startswith("metrics")]
        port = int(url.removeprefix(f"http://{LOOPBACK}:").removesuffix("/metrics"))
        assert await refused(OTHER_LOCAL_ADDRESS, port)
        response = await http.get(url)
    assert 'kuberay_job_info{name="j",namespace="ns",uid="u"} 1\n' in response.text
