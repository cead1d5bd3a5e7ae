"""Where the time of one apply → head pod goes, step by step, read from the traces.

Runs the stack as a deployment does (`scale_stack`: devcluster with its simulated runtime, the
Temporal dev server, one worker and one bridge, each its own process), with the worker and the
bridge exporting their spans over OTLP/HTTP to a receiver in this process. It creates
RayClusters one at a time (a head, no workers) and, for each, reads its trace from the
bridge's delivery to the call that creates the head pod. Every mark on that path is a
timestamp taken in the process that did it (one machine, one clock):

    apply                     the benchmark's create call returned
    delivery                  the bridge's `Deliver:RayCluster` span starts (watch event, window)
    workflow task             the workflow's `RunWorkflow` span (recorded as the task runs),
                              after the delivery's signal-with-start reached the server
    <activity> scheduled      `StartActivity:<activity>` (recorded in the workflow task)
    <activity> started        `RunActivity:<activity>` starts (a worker slot picked it up)
    <activity> done           `RunActivity:<activity>` ends
    POST pods sent / done     the Kubernetes call that creates the head pod

and the time between two marks is one step. Printed: each step's median and p95 over the
clusters, in the order taken, then apply → head pod created. Figures for the README:

    python -m benchmarks.apply_breakdown --count 50
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from activities.kube import client as kube
from benchmarks.raycluster_scale import body
from benchmarks.scale_stack import running_stack
from devcluster.ports import free_port

POD_CALL = "POST /api/v1/namespaces/{namespace}/pods"
DELIVERY = "Deliver:RayCluster"
NAME_ATTRIBUTE = "kuberay_temporal.name"
WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class Span:
    """The part of an exported span the breakdown reads."""

    name: str
    trace_id: bytes
    span_id: bytes
    parent_id: bytes
    start_ns: int
    end_ns: int
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass
class Receiver:
    """An OTLP/HTTP traces endpoint keeping every span it is sent."""

    spans: list[Span] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.read())
        for resource in export.resource_spans:
            for scope in resource.scope_spans:
                self.spans.extend(_span(s) for s in scope.spans)
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    def trace_of(self, cluster: str) -> list[Span]:
        """Every span of the trace the cluster's first delivery started (empty: not yet)."""
        roots = [
            s
            for s in self.spans
            if s.name == DELIVERY and s.attributes.get(NAME_ATTRIBUTE) == cluster
        ]
        if not roots:
            return []
        trace = min(roots, key=lambda s: s.start_ns).trace_id
        return [s for s in self.spans if s.trace_id == trace]


def _span(proto: ProtoSpan) -> Span:
    return Span(
        name=proto.name,
        trace_id=proto.trace_id,
        span_id=proto.span_id,
        parent_id=proto.parent_span_id,
        start_ns=proto.start_time_unix_nano,
        end_ns=proto.end_time_unix_nano,
        attributes={a.key: a.value.string_value for a in proto.attributes},
    )


def marks(applied_ns: int, trace: Sequence[Span]) -> list[tuple[str, int]] | None:
    """The marks from the apply to the head pod's creation, in time order; None while the
    trace does not reach the pod call, and the activity that made it, yet.

    Only the path to the first pod call counts: the delivery and its signal-with-start, then
    the worker's spans that start before that call ends.
    """
    calls = sorted((s for s in trace if s.name == POD_CALL), key=lambda s: s.start_ns)
    deliveries = sorted((s for s in trace if s.name == DELIVERY), key=lambda s: s.start_ns)
    if not calls or not deliveries:
        return None
    call, delivery = calls[0], deliveries[0]
    if call.parent_id not in {s.span_id for s in trace}:
        return None  # the activity around the call ends (and is exported) after it
    # The signal-with-start call is inside "delivery → workflow task": its answer may come
    # after the workflow task has run, so its end is no mark on the path.
    found = [("apply", applied_ns), ("delivery", delivery.start_ns)]
    for span in sorted(trace, key=lambda s: s.start_ns):
        if span.start_ns >= call.start_ns:
            break
        kind, _, activity = span.name.partition(":")
        if kind == "RunWorkflow":
            found.append(("workflow task", span.start_ns))
        elif kind == "StartActivity":
            found.append((f"{activity} scheduled", span.start_ns))
        elif kind == "RunActivity":
            found.append((f"{activity} started", span.start_ns))
            if span.end_ns <= call.start_ns:
                found.append((f"{activity} done", span.end_ns))
    found += [("POST pods sent", call.start_ns), ("head pod created", call.end_ns)]
    return sorted(found, key=lambda mark: mark[1])


def steps(found: Sequence[tuple[str, int]]) -> list[tuple[str, float]]:
    """(from → to, milliseconds) between consecutive marks."""
    return [(f"{a} → {b}", (t_b - t_a) / 1e6) for (a, t_a), (b, t_b) in itertools.pairwise(found)]


def table(runs: Sequence[Sequence[tuple[str, float]]]) -> list[str]:
    """One line per step (in the order of the first run that has it): p50 and p95 in ms."""
    order: list[str] = []
    values: dict[str, list[float]] = {}
    for run in runs:
        for label, ms in run:
            if label not in values:
                order.append(label)
            values.setdefault(label, []).append(ms)
    lines = [f"{'step':<62} {'p50 ms':>8} {'p95 ms':>8} {'runs':>5}"]
    for label in order:
        ms = sorted(values[label])
        p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
        lines.append(f"{label:<62} {statistics.median(ms):8.1f} {p95:8.1f} {len(ms):5d}")
    return lines


@contextlib.asynccontextmanager
async def receiving() -> AsyncIterator[tuple[Receiver, str]]:
    """A receiver listening on a loopback port, and the endpoint to give the exporters."""
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/v1/traces", receiver.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield receiver, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def run(count: int, ready_delay: float, state: Path) -> list[list[tuple[str, float]]]:
    """Apply `count` RayClusters one after another; the steps of each, in order."""
    runs: list[list[tuple[str, float]]] = []
    async with receiving() as (receiver, endpoint):
        tracing = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "50",  # export soon; the timestamps do not depend on it
        }
        async with running_stack(state, 1, ready_delay, tracing) as stack:
            for index in range(count):
                name = f"breakdown-{index:04d}"
                applied = time.time_ns()
                await stack.kube.create(kube.RAYCLUSTERS, "default", body(name, workers=0))
                deadline = time.monotonic() + WAIT_SECONDS
                while (found := marks(applied, receiver.trace_of(name))) is None:
                    if time.monotonic() > deadline:
                        missing = f"no pod call in its trace after {WAIT_SECONDS}s"
                        raise RuntimeError(f"{name}: {missing}")
                    await asyncio.sleep(0.05)  # a benchmark waits on its receiver's spans
                runs.append(steps(found))
    return runs


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=50, help="RayClusters, one at a time")
    parser.add_argument("--ready-delay", type=float, default=1.0, help="simulated pod start, s")
    return parser.parse_args(argv)


async def main(argv: Sequence[str]) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory() as state:
        runs = await run(args.count, args.ready_delay, Path(state))
    for line in table(runs):
        print(line)
    totals = [sum(ms for _, ms in run) for run in runs]
    print(f"apply -> head pod created p50: {statistics.median(totals):.1f} ms ({len(runs)} CRs)")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
