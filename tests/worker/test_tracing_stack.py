"""One trace from applying a RayJob to the Kubernetes call that creates its cluster's pods.

(And to the Ray dashboard calls about its job, through the API server's service proxy: on the
simulated runtime devcluster's Ray simulator answers them.)

The stack runs in this process on real parts: devcluster (simulated runtime: pods turn Ready
without processes), the real Temporal dev server, the worker with every workflow and
activity, and the bridge. Bridge and worker each have their own client, tracer provider and
service name, as they would as two processes; both hand their spans to one in-memory
exporter, so the only way a worker span can join the bridge's trace is the Temporal headers.

What "one trace" means here: the RayJob's workflow creates a RayCluster, whose own workflow
(started by the bridge on the cluster's first event) creates the pods. The creating activity
writes its trace context onto the RayCluster, and the bridge continues that trace, so the
pod-creating call descends from the RayJob's delivery:

    Deliver:RayJob (bridge) > SignalWithStartWorkflow:RayJob > StartActivity:<create cluster>
    > RunActivity:<create cluster> (worker) > Deliver:RayCluster (bridge)
    > SignalWithStartWorkflow:RayCluster > StartActivity:<…> > RunActivity:<…> (worker)
    > POST /api/v1/namespaces/{namespace}/pods
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest_asyncio
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.spans import TRACEPARENT_ANNOTATION
from activities.registry import build_activities
from bridge.running import Bridge
from bridge.signalling import Signaller
from devcluster.server import DevCluster
from kuberay_temporal.crd_install import install_crds
from runtime.settings import Settings
from runtime.telemetry import Tracing, tracing_to
from runtime.temporal_client import connect, data_converter
from tests.eventually import eventually
from worker.running import build_worker, build_workflow_runner
from workflows.registry import WORKFLOWS

POD_CALL = "POST /api/v1/namespaces/{namespace}/pods"
CLUSTER_CALL = "POST /apis/ray.io/v1/namespaces/{namespace}/rayclusters"


@dataclass
class TracedStack:
    kube: KubeClient
    env: WorkflowEnvironment
    settings: Settings
    spans: InMemorySpanExporter
    worker: Tracing


@pytest_asyncio.fixture
async def traced_stack(
    tmp_path: Path, local_env: WorkflowEnvironment
) -> AsyncIterator[TracedStack]:
    spans = InMemorySpanExporter()
    worker_tracing = tracing_to(spans, "kuberay-temporal-worker")
    bridge_tracing = tracing_to(spans, "kuberay-temporal-bridge")
    target = local_env.client.service_client.config.target_host
    settings = Settings(temporal_address=target, task_queue=f"trace-{uuid.uuid4()}")
    async with DevCluster(tmp_path / "cluster", runtime="simulated") as cluster:
        config = str(cluster.kubeconfig_path)
        admin = await kube.connect(config)
        await install_crds(admin)
        worker_kube = await kube.connect(config, worker_tracing.kube_tracer)
        bridge_kube = await kube.connect(config, bridge_tracing.kube_tracer)
        worker_client = await connect(settings, None, worker_tracing.interceptors())
        bridge_client = await connect(settings, None, bridge_tracing.interceptors())
        signaller = Signaller(bridge_client, settings.task_queue, bridge_tracing.tracer)
        bridge = Bridge(bridge_kube, signaller, window=0.05)
        activities = build_activities(worker_kube)
        try:
            async with build_worker(worker_client, settings, activities):
                task = asyncio.create_task(bridge.run())
                try:
                    await bridge.wait_listed()
                    yield TracedStack(admin, local_env, settings, spans, worker_tracing)
                finally:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        finally:
            for client in (admin, worker_kube, bridge_kube):
                await client.close()


def rayjob(name: str) -> dict[str, Any]:
    def group(role: str) -> dict[str, Any]:
        container = {"name": f"ray-{role}", "image": "rayproject/ray:2.60.0"}
        return {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}}

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            # devcluster's simulated Ray answers the dashboard API: the job is submitted.
            "entrypoint": "echo traced",
            "submissionMode": "HTTPMode",
            "rayClusterSpec": {
                "rayVersion": "2.60.0",
                "headGroupSpec": group("head"),
                "workerGroupSpecs": [
                    {"groupName": "small", "replicas": 1, "minReplicas": 1, "maxReplicas": 1}
                    | group("worker")
                ],
            },
        },
    }


def ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[ReadableSpan]:
    """`span`'s parents up to the root, nearest first (every one must have been exported)."""
    chain = []
    while span.parent is not None:
        span = by_id[span.parent.span_id]
        chain.append(span)
    return chain


def rooted(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> bool:
    """Whether every ancestor of `span` has been exported."""
    while span.parent is not None:
        if span.parent.span_id not in by_id:
            return False
        span = by_id[span.parent.span_id]
    return True


def child_named(
    spans: Sequence[ReadableSpan], parent: ReadableSpan, prefix: str
) -> list[ReadableSpan]:
    parent_id = parent.context.span_id
    return [
        s
        for s in spans
        if s.name.startswith(prefix) and s.parent is not None and s.parent.span_id == parent_id
    ]


def service(span: ReadableSpan) -> object:
    return span.resource.attributes.get("service.name")


async def test_applying_a_rayjob_yields_one_trace_to_the_pod_creating_call(
    traced_stack: TracedStack,
) -> None:
    stack = traced_stack
    name = f"traced-{uuid.uuid4().hex[:6]}"
    await stack.kube.create(kube.RAYJOBS, "default", rayjob(name))

    def pod_calls() -> list[ReadableSpan]:
        return [s for s in stack.spans.get_finished_spans() if s.name == POD_CALL]

    def pod_calls_traced() -> bool:
        # A span is exported when it ends: the activity around a call ends after it.
        by_id = {s.context.span_id: s for s in stack.spans.get_finished_spans()}
        calls = pod_calls()
        return len(calls) >= 2 and all(rooted(call, by_id) for call in calls)

    await eventually(pod_calls_traced, within=60, message="head and worker pods, traced")
    spans = stack.spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}

    # The trace's root: the bridge's first delivery of the RayJob (later ones, such as
    # its status writes, are traces of their own or continue this one).
    job_delivery = ancestors(pod_calls()[0], by_id)[-1]
    assert job_delivery.name == "Deliver:RayJob"
    assert (job_delivery.attributes or {})["kuberay_temporal.name"] == name
    assert job_delivery.parent is None and job_delivery.kind == SpanKind.PRODUCER
    assert service(job_delivery) == "kuberay-temporal-bridge"
    trace_id = job_delivery.context.trace_id

    # Every pod-creating call is in the RayJob's trace, through the cluster's own workflow.
    for pod_call in pod_calls():
        assert pod_call.context.trace_id == trace_id
        assert pod_call.kind == SpanKind.CLIENT and service(pod_call) == "kuberay-temporal-worker"
        attributes = pod_call.attributes or {}
        assert attributes["http.request.method"] == "POST"
        assert attributes["http.response.status_code"] == 201
        assert str(attributes["url.full"]).endswith("/api/v1/namespaces/default/pods")
        names = [s.name for s in ancestors(pod_call, by_id)]
        assert names[0].startswith("RunActivity:") and names[1].startswith("StartActivity:")
        assert names[2:4] == ["SignalWithStartWorkflow:RayCluster", "Deliver:RayCluster"]
        assert names[4].startswith("RunActivity:") and names[5].startswith("StartActivity:")
        assert names[6:] == ["SignalWithStartWorkflow:RayJob", "Deliver:RayJob"]
        assert ancestors(pod_call, by_id)[-1] is job_delivery

    # The RayJob's workflow span, and its own call creating the RayCluster.
    (job_start,) = child_named(spans, job_delivery, "SignalWithStartWorkflow:RayJob")
    (job_run,) = child_named(spans, job_start, "RunWorkflow:RayJob")
    assert service(job_run) == "kuberay-temporal-worker"
    cluster_delivery = ancestors(pod_calls()[0], by_id)[3]
    create_cluster_activity = by_id[cluster_delivery.parent.span_id]  # type: ignore[union-attr]
    (cluster_call,) = child_named(spans, create_cluster_activity, CLUSTER_CALL)
    assert (cluster_call.attributes or {})["http.response.status_code"] == 201
    (cluster_start,) = child_named(spans, cluster_delivery, "SignalWithStartWorkflow:RayCluster")
    assert child_named(spans, cluster_start, "RunWorkflow:RayCluster")

    # The job goes to Ray's dashboard over HTTP, from an activity of the same trace.
    def dashboard_calls() -> list[tuple[ReadableSpan, ReadableSpan]]:
        finished = stack.spans.get_finished_spans()
        by_id = {s.context.span_id: s for s in finished}
        return [
            (s, by_id[s.parent.span_id])
            for s in finished
            if "/api/jobs/" in str((s.attributes or {}).get("url.full", ""))
            and s.context.trace_id == trace_id
            and s.parent is not None
            and s.parent.span_id in by_id  # its activity ended, too
        ]

    await eventually(dashboard_calls, within=60, message="a dashboard call in the trace")
    call, activity = dashboard_calls()[0]
    assert call.kind == SpanKind.CLIENT and service(call) == "kuberay-temporal-worker"
    assert "http.response.status_code" in (call.attributes or {})
    assert activity.name.startswith("RunActivity:")

    # The cluster carries the trace it was created in, for the bridge to continue.
    (cluster,) = await stack.kube.list_all(
        kube.RAYCLUSTERS, "default", f"ray.io/originated-from-cr-name={name}"
    )
    traceparent = cluster["metadata"]["annotations"][TRACEPARENT_ANNOTATION]
    assert traceparent.split("-")[1] == format(trace_id, "032x")

    # Replaying the RayJob's history with the interceptor records no workflow span again.
    workflow_id = str((job_run.attributes or {})["temporalWorkflowID"])
    history = await stack.env.client.get_workflow_handle(workflow_id).fetch_history()
    replayer = Replayer(
        workflows=WORKFLOWS,
        data_converter=data_converter(stack.settings),
        workflow_runner=build_workflow_runner(),
        interceptors=stack.worker.interceptors(),
    )
    await replayer.replay_workflow(history)
    runs = [
        s
        for s in stack.spans.get_finished_spans()
        if s.name == "RunWorkflow:RayJob"
        and (s.attributes or {}).get("temporalWorkflowID") == workflow_id
    ]
    assert runs == [job_run]
