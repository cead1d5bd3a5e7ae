"""Tracing follows the standard OTEL_* variables: off without them, OTLP/HTTP with them.

The OTLP side is a real HTTP server in the test that receives what the SDK's exporter posts
and decodes it with the OTLP protobuf definitions, as a collector would.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from activities.kube.spans import in_trace
from runtime.settings import Settings
from runtime.telemetry import TracingConfigError, build_tracing
from runtime.temporal_client import connect
from tests.worker.otlp import Collector, receiving
from worker.running import build_worker
from workflows.diagnostics import PingInput, PingWorkflow


@pytest_asyncio.fixture
async def collector() -> AsyncIterator[Collector]:
    async with receiving() as received:
        yield received


@pytest.fixture(autouse=True)
def no_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)


async def test_without_variables_nothing_is_traced_and_everything_works(
    local_env: WorkflowEnvironment, task_queue: str
) -> None:
    tracing = build_tracing("kuberay-temporal-worker")
    assert not tracing.enabled
    assert tracing.interceptors() == [] and tracing.kube_tracer is None
    with tracing.tracer.start_as_current_span("x") as span:
        assert not span.is_recording()
        assert not in_trace()

    target = local_env.client.service_client.config.target_host
    settings = Settings(temporal_address=target, task_queue=task_queue)
    client = await connect(settings, None, tracing.interceptors())
    async with build_worker(client, settings):
        await client.execute_workflow(
            PingWorkflow.run, PingInput(), id=f"ping-{uuid.uuid4()}", task_queue=task_queue
        )
    await tracing.shutdown()


async def test_an_otlp_endpoint_exports_the_workflow_spans(
    collector: Collector,
    monkeypatch: pytest.MonkeyPatch,
    local_env: WorkflowEnvironment,
    task_queue: str,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "worker-under-test")
    tracing = build_tracing("kuberay-temporal-worker")
    assert tracing.enabled
    assert tracing.exporters == [f"otlp {collector.url}/v1/traces"]

    target = local_env.client.service_client.config.target_host
    settings = Settings(temporal_address=target, task_queue=task_queue)
    client = await connect(settings, None, tracing.interceptors())
    async with build_worker(client, settings):
        with tracing.tracer.start_as_current_span("ping from a test"):
            await client.execute_workflow(
                PingWorkflow.run, PingInput(), id=f"ping-{uuid.uuid4()}", task_queue=task_queue
            )
    await tracing.shutdown()  # flushes the batch

    assert set(collector.content_types) == {"application/x-protobuf"}
    names = collector.span_names("worker-under-test")
    assert "ping from a test" in names
    assert {"StartWorkflow:Ping", "RunWorkflow:Ping", "CompleteWorkflow:Ping"} <= set(names)


def test_the_default_service_name_names_the_process(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{collector.url}/v1/traces")
    tracing = build_tracing("kuberay-temporal-bridge")
    assert tracing.provider is not None
    assert tracing.provider.resource.attributes["service.name"] == "kuberay-temporal-bridge"


@pytest.mark.parametrize(
    ("variables", "enabled"),
    [
        pytest.param({"OTEL_TRACES_EXPORTER": "console"}, True, id="console"),
        pytest.param({"OTEL_TRACES_EXPORTER": "none"}, False, id="none"),
        pytest.param(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
            False,
            id="sdk-disabled",
        ),
        pytest.param({"OTEL_SERVICE_NAME": "x"}, False, id="name-alone"),
    ],
)
def test_which_variables_turn_tracing_on(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], enabled: bool
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert build_tracing("x").enabled == enabled


@pytest.mark.parametrize(
    ("name", "value"),
    [
        pytest.param("OTEL_TRACES_EXPORTER", "zipkin", id="exporter"),
        pytest.param("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", id="protocol"),
    ],
)
def test_an_exporter_we_do_not_have_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
    monkeypatch.setenv(name, value)
    with pytest.raises(TracingConfigError, match=name):
        build_tracing("x")


@pytest.mark.parametrize("command", ["worker", "bridge", "dev"])
async def test_the_commands_refuse_an_unavailable_protocol_at_start(
    command: str, tmp_path: Path
) -> None:
    environ = os.environ | {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
    }
    extra = ["--state-dir", str(tmp_path)] if command == "dev" else []
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        command,
        *extra,
        env=environ,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 60)

    assert process.returncode == 2
    (line,) = stderr.decode().splitlines()
    assert line.startswith(f"kuberay-temporal {command}: invalid settings: ")
    assert "OTEL_EXPORTER_OTLP_PROTOCOL='grpc'" in line
