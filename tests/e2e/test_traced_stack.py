"""`kuberay-temporal dev` with an OTLP endpoint exports a RayCluster's trace to a collector.

The whole local stack as a process (simulated runtime), configured only by the standard
variables, sends its spans over OTLP/HTTP to a receiver in the test (`tests/worker/otlp.py`).
The finer structure of a trace is asserted in-process in `tests/worker/test_tracing_stack.py`;
this checks the wiring of the real command: the variables, the batching exporter, and the
flush when the stack stops. The batch delay is ten minutes, so the spans can only arrive by
that flush (the commands end with `os._exit`, which runs no atexit handler).
"""

from __future__ import annotations

from pathlib import Path

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.e2e.conftest import running_stack
from tests.eventually import eventually
from tests.reference import REPO_ROOT
from tests.worker.otlp import receiving

SERVICE = "kuberay-temporal-dev"
POD_CALL = "POST /api/v1/namespaces/{namespace}/pods"


def chain(span: Span, spans: list[Span]) -> list[Span]:
    """`span`'s ancestors, nearest first, as far as they were received."""
    by_id = {s.span_id: s for s in spans}
    ancestors = []
    while span.parent_span_id in by_id:
        span = by_id[span.parent_span_id]
        ancestors.append(span)
    return ancestors


async def test_the_dev_stack_exports_a_raycluster_trace_over_otlp(tmp_path: Path) -> None:
    async with receiving() as collector:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_BSP_SCHEDULE_DELAY": "600000"}
        async with running_stack(tmp_path, "simulated", env) as stack:
            await stack.kubectl("apply", "-f", str(REPO_ROOT / "samples" / "raycluster.yaml"))

            async def pods() -> bool:
                listed = await stack.kubectl("get", "pods", "-l", "ray.io/cluster", "-o", "name")
                return len(listed.split()) >= 2

            await eventually(pods, within=90, message="the cluster's pods")
        # The stack stopped; what it had batched was flushed on the way out.
        spans = collector.spans(SERVICE)

    (pod_call, *_) = [s for s in spans if s.name == POD_CALL]
    ancestors = chain(pod_call, spans)
    names = [s.name for s in ancestors]
    assert names[0].startswith("RunActivity:") and names[1].startswith("StartActivity:")
    assert names[2:] == ["SignalWithStartWorkflow:RayCluster", "Deliver:RayCluster"]
    # One trace from the bridge's delivery to the POST (later passes have traces of their own).
    assert all(s.trace_id == pod_call.trace_id for s in ancestors)
    assert "RunWorkflow:RayCluster" in {s.name for s in spans}
