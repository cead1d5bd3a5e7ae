"""A minimal OTLP/HTTP trace receiver for tests: what an OpenTelemetry collector would get.

A real HTTP server on a loopback port; each export is decoded with the OTLP protobuf
definitions (`opentelemetry-proto`, which the exporter itself depends on).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span


class Collector:
    """Receives OTLP/HTTP trace exports on `url` + `/v1/traces`."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.content_types: list[str] = []
        self.url = ""

    async def receive(self, request: web.Request) -> web.Response:
        self.content_types.append(request.content_type)
        self.requests.append(ExportTraceServiceRequest.FromString(await request.read()))
        return web.Response(body=b"", content_type="application/x-protobuf")

    def spans(self, service: str) -> list[Span]:
        """Every span received from processes whose `service.name` is `service`."""
        found: list[Span] = []
        for export in self.requests:
            for resource_spans in export.resource_spans:
                resource = resource_spans.resource.attributes
                attributes = {a.key: a.value.string_value for a in resource}
                if attributes.get("service.name") != service:
                    continue
                for scope_spans in resource_spans.scope_spans:
                    found += scope_spans.spans
        return found

    def span_names(self, service: str) -> list[str]:
        return [span.name for span in self.spans(service)]


@asynccontextmanager
async def receiving() -> AsyncIterator[Collector]:
    """A collector listening for the duration of the block."""
    received = Collector()
    app = web.Application()
    app.router.add_post("/v1/traces", received.receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    received.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield received
    finally:
        await runner.cleanup()
