"""OpenTelemetry traces for the worker, the bridge and the dev stack, from the OTEL_* variables.

One trace follows a CR change from the bridge's delivery through the workflow to each
activity and the Kubernetes and Ray dashboard requests it makes: the bridge's span
(`bridge.signalling`) travels in the Temporal headers of the start and signal calls, and
Temporal's `TracingInterceptor` on each process's client turns them into `RunWorkflow`,
`StartActivity` and `RunActivity` spans; the HTTP spans come from `activities.kube.spans`.

Why `TracingInterceptor` and not the newer `OpenTelemetryPlugin`: our workflows live as long
as their CR, for months. The plugin's workflow span ends when the workflow does, so nothing
of a running CR's workflow would reach the backend; the interceptor records each workflow
span as a completed, zero-length span at the moment it happens, and only when the workflow
is not replaying (its `_completed_span` returns early on replay), so a worker restart or a
cache eviction adds no span twice. Those spans are created outside the sandbox, through an
extern function, with this module's tracer, so a plain SDK provider serves: the plugin's
replay-safe provider (`create_tracer_provider`) is for spans made by workflow code itself,
which ours makes none of.

A trace starts when its workflow starts: every later activity of a CR's workflow is in the
trace of the delivery that started it (later deliveries link into it as `HandleSignal`).

The exporter follows the standard variables and is off unless one asks for it:
`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (OTLP over HTTP with
protobuf), or `OTEL_TRACES_EXPORTER` (`otlp`, `console`, `none`). `OTEL_SERVICE_NAME` and
`OTEL_RESOURCE_ATTRIBUTES` name the process, and `OTEL_SDK_DISABLED=true` turns it all off.
The exporter reads its own variables (headers, timeout, certificates), the batch processor
its `OTEL_BSP_*` ones.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import Tracer
from temporalio.client import Interceptor
from temporalio.contrib.opentelemetry import TracingInterceptor

from activities.kube.spans import default_tracer

TRACER_NAME = "kuberay_temporal"

VARIABLES = frozenset(
    {
        "OTEL_SDK_DISABLED",
        "OTEL_TRACES_EXPORTER",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_SERVICE_NAME",
        "OTEL_RESOURCE_ATTRIBUTES",
    }
)
"""The OTEL_* variables this module reads (the exporter and batcher read more of their own)."""

_PROTOCOL = "http/protobuf"
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


class TracingConfigError(ValueError):
    """The OTEL_* variables ask for something this build cannot export to."""


@dataclass(frozen=True)
class Tracing:
    """The tracing side of one process: a provider, or nothing when tracing is off."""

    provider: TracerProvider | None = None
    """None: tracing is off, every tracer makes no spans."""
    exporters: list[str] = field(default_factory=list)
    """What the spans go to, for the startup log line (`otlp http://…`, `console`)."""

    @property
    def enabled(self) -> bool:
        """Whether spans are recorded and exported."""
        return self.provider is not None

    @property
    def tracer(self) -> Tracer:
        """The tracer for our own spans (bridge deliveries, HTTP calls)."""
        if self.provider is None:
            return default_tracer()
        return self.provider.get_tracer(TRACER_NAME)

    @property
    def kube_tracer(self) -> Tracer | None:
        """The tracer for `activities.kube.client.connect`: None when off, so nothing is wrapped."""
        return self.tracer if self.enabled else None

    def interceptors(self) -> list[Interceptor]:
        """The client interceptors that carry and record traces through Temporal."""
        if self.provider is None:
            return []
        return [TracingInterceptor(self.tracer)]

    async def shutdown(self) -> None:
        """Export what is buffered and stop (the processes end with `os._exit`, no atexit)."""
        if self.provider is not None:
            await asyncio.to_thread(self.provider.shutdown)


def tracing_to(exporter: SpanExporter, service_name: str) -> Tracing:
    """Tracing that hands each span to `exporter` as it ends (tests, the console).

    Args:
        exporter: Receives every ended span, synchronously.
        service_name: `service.name` of the process's resource.
    """
    provider = TracerProvider(resource=_resource(service_name))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracing(provider, [type(exporter).__name__])


def build_tracing(service_name: str) -> Tracing:
    """Tracing as the standard OTEL_* variables of this process ask for; off by default.

    Args:
        service_name: `service.name` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES`
            name the service.

    Returns:
        Tracing with a batching OTLP/HTTP and/or console exporter, or tracing that is off.

    Raises:
        TracingConfigError: An exporter or OTLP protocol that this build does not have.
    """
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return Tracing()
    processors: list[SpanProcessor] = []
    described: list[str] = []
    for name in _exporter_names():
        if name == "otlp":
            exporter, where = _otlp_exporter()
            processors.append(BatchSpanProcessor(exporter))
            described.append(f"otlp {where}")
        elif name == "console":
            processors.append(SimpleSpanProcessor(ConsoleSpanExporter()))
            described.append("console")
        elif name != "none":
            raise TracingConfigError(
                f"OTEL_TRACES_EXPORTER={name!r} is not available; use otlp, console or none"
            )
    if not processors:
        return Tracing()
    provider = TracerProvider(resource=_resource(service_name))
    for processor in processors:
        provider.add_span_processor(processor)
    return Tracing(provider, described)


def _exporter_names() -> list[str]:
    """`OTEL_TRACES_EXPORTER`, or `otlp` when only an OTLP endpoint is set, or nothing."""
    names = [n.strip().lower() for n in os.environ.get("OTEL_TRACES_EXPORTER", "").split(",")]
    names = [name for name in names if name]
    if names:
        return names
    # The specification's default exporter is OTLP; we wait for an endpoint before
    # sending anything, so that a process nobody configured does not try localhost:4318.
    return ["otlp"] if any(os.environ.get(v) for v in _ENDPOINTS) else []


def _otlp_exporter() -> tuple[SpanExporter, str]:
    for variable in _PROTOCOLS:
        protocol = os.environ.get(variable, "").strip()
        if protocol and protocol != _PROTOCOL:
            raise TracingConfigError(
                f"{variable}={protocol!r}: only {_PROTOCOL} is built in (the collector's port "
                "4318, not 4317)"
            )
    # Imported here: the exporter pulls in requests and protobuf, which no untraced
    # process needs to load.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    exporter = OTLPSpanExporter()
    return exporter, str(getattr(exporter, "_endpoint", ""))


def _resource(service_name: str) -> Resource:
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service_name}))
    return resource
