"""`kuberay-temporal dev` end to end: server, worker and attributes up; Ctrl-C; state kept."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

import aiohttp
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.contrib.pydantic import pydantic_data_converter

from devcluster.ports import free_port
from runtime.codec import ENCODING, PAYLOAD_KEY_VARIABLE
from runtime.settings import Settings
from runtime.temporal_client import data_converter
from workflows.diagnostics import PingInput, PingWorkflow
from workflows.messages import RAY_KIND, RAY_NAME

T = TypeVar("T")

COMPLETED = WorkflowExecutionStatus.COMPLETED

DEADLINE = 60.0  # seconds; start-up is about a second, shutdown a few


async def eventually(attempt: Callable[[], Awaitable[T | None]], what: str) -> T:
    """Retry `attempt` until it returns a value (not None) or the deadline passes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    last_error: Exception | None = None
    while loop.time() < deadline:
        try:
            result = await attempt()
        except (RuntimeError, OSError) as err:  # server not answering yet
            last_error = err
            result = None
        if result is not None:
            return result
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {DEADLINE} s (last error: {last_error})")


def temporal_processes_using(state_dir: Path) -> list[int]:
    """Pids of processes whose command line mentions the state directory's database."""
    needle = str(state_dir / "temporal.db").encode()
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if needle in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except OSError:
            continue  # exited while we looked
    return pids


async def wait_until_listed_completed(client: Client, workflow_id: str) -> None:
    """Wait until a search by our attributes lists the workflow as completed.

    Visibility is updated asynchronously, so the workflow may first be listed as running.
    """
    query = f"RayKind = 'Ping' AND RayName = '{workflow_id}'"

    async def search() -> bool | None:
        found = [(wf.id, wf.status) async for wf in client.list_workflows(query)]
        return True if found == [(workflow_id, COMPLETED)] else None

    await eventually(search, f"{workflow_id} listed as completed by search attributes")


@asynccontextmanager
async def dev_stack(
    state_dir: Path, port: int, ui_port: int, *args: str, key: str | None = None
) -> AsyncIterator[Client]:
    """Run `kuberay-temporal dev`, yield a client to it, stop it with SIGINT and check.

    With `key`, the stack and the client encrypt payloads with it.
    """
    env = dict(os.environ)
    env.pop(PAYLOAD_KEY_VARIABLE, None)
    if key is not None:
        env[PAYLOAD_KEY_VARIABLE] = key
    converter = data_converter(Settings.from_env({PAYLOAD_KEY_VARIABLE: key} if key else {}))
    output = state_dir.parent / f"dev-{uuid.uuid4().hex[:8]}.out"
    with output.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kuberay_temporal",
            "dev",
            "--state-dir",
            str(state_dir),
            "--temporal-port",
            str(port),
            "--ui-port",
            str(ui_port),
            "--kube-port",
            str(free_port()),
            *args,
            env=env,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:

        async def connect() -> Client:
            if process.returncode is not None:
                raise AssertionError(f"dev exited early: {output.read_text()}")
            return await Client.connect(f"127.0.0.1:{port}", data_converter=converter)

        yield await eventually(connect, "connecting to the dev server")
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
        returncode = await asyncio.wait_for(process.wait(), DEADLINE)
    log = output.read_text()
    assert returncode == 0, log
    assert "kuberay-temporal dev: stopped" in log, log
    assert temporal_processes_using(state_dir) == []


async def test_dev_runs_server_and_worker_and_keeps_state(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    port, ui_port = free_port(), free_port()
    workflow_id = f"ping-{uuid.uuid4()}"

    async with dev_stack(state_dir, port, ui_port) as client:
        # Completes only if the worker polls the default task queue; starting with our
        # attributes fails if they are not registered.
        result = await asyncio.wait_for(
            client.execute_workflow(
                PingWorkflow.run,
                PingInput(duration=timedelta(milliseconds=100)),
                id=workflow_id,
                task_queue="kuberay",
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(RAY_KIND, "Ping"),
                        SearchAttributePair(RAY_NAME, workflow_id),
                    ]
                ),
            ),
            DEADLINE,
        )
        assert result.finished_at - result.started_at >= timedelta(milliseconds=100)

        await wait_until_listed_completed(client, workflow_id)

    async with dev_stack(state_dir, port, ui_port) as client:
        await wait_until_listed_completed(client, workflow_id)


async def test_dev_with_a_payload_key_gives_the_web_ui_a_codec_server(tmp_path: Path) -> None:
    port, ui_port, codec_port = free_port(), free_port(), free_port()
    key = base64.b64encode(os.urandom(32)).decode()
    workflow_id = f"ping-{uuid.uuid4()}"
    codec_args = ("--codec-port", str(codec_port))

    async with dev_stack(tmp_path / "state", port, ui_port, *codec_args, key=key) as client:
        await asyncio.wait_for(
            client.execute_workflow(
                PingWorkflow.run,
                PingInput(duration=timedelta(milliseconds=1)),
                id=workflow_id,
                task_queue="kuberay",
            ),
            DEADLINE,
        )
        async with aiohttp.ClientSession() as session:
            # The UI learns the endpoint from its server's settings, then calls it from the
            # browser, at the UI's origin.
            async with session.get(f"http://127.0.0.1:{ui_port}/api/v1/settings") as response:
                settings = await response.json()
            assert settings["Codec"]["Endpoint"] == f"http://127.0.0.1:{codec_port}"

            plain = Client(client.service_client, data_converter=pydantic_data_converter)
            history = await plain.get_workflow_handle(workflow_id).fetch_history()
            started = history.events[0].workflow_execution_started_event_attributes.input
            assert started.payloads[0].metadata["encoding"] == ENCODING
            async with session.post(
                f"{settings['Codec']['Endpoint']}/decode",
                json=json_format.MessageToDict(started),
                headers={"Origin": f"http://localhost:{ui_port}", "X-Namespace": "default"},
            ) as response:
                assert response.status == 200, await response.text()
                decoded = json_format.ParseDict(await response.json(), Payloads())
    assert decoded.payloads[0].metadata["encoding"] == b"json/plain"
    assert b"duration" in decoded.payloads[0].data
