"""Client spans for HTTP calls, and the trace context a created CR carries.

The dashboard calls go through `httpx.MockTransport` (the real dashboard is in the real-Ray
tests); the Kubernetes calls go to a real devcluster.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode, Tracer

from activities.kube import client as kube
from activities.kube import errors
from activities.kube.spans import (
    TRACEPARENT_ANNOTATION,
    TracingTransport,
    in_trace,
    kube_path_template,
    parent_context,
    stamp_trace_context,
    traceparent_of,
)
from activities.rayservice import contract as service_contract
from activities.rayservice.kube_effects import ServiceActivities
from devcluster.server import DevCluster
from kuberay_temporal.crd_install import install_crds
from tests.activities.rayservice.test_kube_effects import make_service, run


@pytest.fixture
def spans() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracer(spans: InMemorySpanExporter) -> Tracer:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    return provider.get_tracer("test")


@pytest.mark.parametrize(
    ("path", "template"),
    [
        pytest.param(
            "/api/v1/namespaces/ns/pods", "/api/v1/namespaces/{namespace}/pods", id="list"
        ),
        pytest.param(
            "/api/v1/namespaces/ns/pods/p-1/status",
            "/api/v1/namespaces/{namespace}/pods/{name}/status",
            id="subresource",
        ),
        pytest.param(
            "/apis/ray.io/v1/namespaces/ns/rayclusters/c",
            "/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}",
            id="group",
        ),
        pytest.param("/api/v1/namespaces/ns", "/api/v1/namespaces/{name}", id="namespace"),
        pytest.param(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.ray.io",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
            id="cluster-scoped",
        ),
        pytest.param("/version", "/version", id="not-a-resource"),
    ],
)
def test_kube_path_template(path: str, template: str) -> None:
    assert kube_path_template(path) == template


def test_a_created_object_carries_the_trace_it_was_created_in(tracer: Tracer) -> None:
    outside: dict[str, object] = {"metadata": {"name": "c"}}
    stamp_trace_context(outside)
    assert traceparent_of(outside) is None

    manifest: dict[str, object] = {"metadata": {"name": "c", "annotations": {"a": "b"}}}
    with tracer.start_as_current_span("activity") as span:
        stamp_trace_context(manifest)
    traceparent = traceparent_of(manifest)
    assert traceparent is not None
    annotations = manifest["metadata"]["annotations"]  # type: ignore[index]
    assert annotations == {"a": "b", TRACEPARENT_ANNOTATION: traceparent}

    context = parent_context(traceparent)
    assert context is not None
    with tracer.start_as_current_span("delivery", context=context) as child:
        assert child.get_span_context().trace_id == span.get_span_context().trace_id
    assert parent_context("00-garbage") is None
    assert parent_context(None) is None


async def test_dashboard_calls_are_client_spans_that_send_their_context(
    tracer: Tracer, spans: InMemorySpanExporter
) -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(404 if request.url.path.endswith("missing") else 200, json={})

    transport = TracingTransport(httpx.MockTransport(answer), tracer)
    async with httpx.AsyncClient(transport=transport) as http:
        await http.get("http://head.ns:8265/api/jobs/?token=x")
        with tracer.start_as_current_span("activity") as activity:
            await http.get("http://head.ns:8265/api/jobs/?token=x")
            await http.get("http://head.ns:8265/api/jobs/missing")

    # Outside a trace: no span, no header.
    assert "traceparent" not in seen[0].headers
    ok, missing, _ = spans.get_finished_spans()
    assert ok.kind == SpanKind.CLIENT and ok.name == "GET"
    assert ok.parent is not None and ok.parent.span_id == activity.get_span_context().span_id
    assert dict(ok.attributes or {}) == {
        "http.request.method": "GET",
        "url.full": "http://head.ns:8265/api/jobs/",
        "server.address": "head.ns",
        "server.port": 8265,
        "http.response.status_code": 200,
    }
    assert seen[1].headers["traceparent"].split("-")[2] == format(ok.context.span_id, "016x")
    assert (missing.attributes or {})["error.type"] == "404"
    assert missing.status.status_code == StatusCode.ERROR


async def test_kubernetes_calls_are_client_spans(
    tmp_path: Path, tracer: Tracer, spans: InMemorySpanExporter
) -> None:
    async with DevCluster(tmp_path / "cluster") as cluster:
        client = await kube.connect(str(cluster.kubeconfig_path), tracer)
        try:
            await client.list_all(kube.PODS, "default")  # outside a trace
            with tracer.start_as_current_span("activity"):
                await client.get_or_none(kube.CONFIGMAPS, "default", "absent")
                config_map = {"metadata": {"name": "cm"}, "data": {"k": "v"}}
                await client.create(kube.CONFIGMAPS, "default", config_map)
        finally:
            await client.close()
    with pytest.raises(errors.KubeUnavailable):
        await cluster_gone_client(tracer, str(cluster.kubeconfig_path))

    absent, created, _ = spans.get_finished_spans()[:3]
    assert absent.name == "GET /api/v1/namespaces/{namespace}/configmaps/{name}"
    assert (absent.attributes or {})["http.response.status_code"] == 404
    assert created.name == "POST /api/v1/namespaces/{namespace}/configmaps"
    attributes = created.attributes or {}
    assert attributes["http.response.status_code"] == 201
    assert attributes["url.template"] == "/api/v1/namespaces/{namespace}/configmaps"
    assert str(attributes["url.full"]).endswith("/api/v1/namespaces/default/configmaps")
    unreachable = spans.get_finished_spans()[-2]
    assert unreachable.name == "GET /api/v1/namespaces/{namespace}/pods"
    assert (unreachable.attributes or {})["error.type"] == "KubeUnavailable"
    assert unreachable.status.status_code == StatusCode.ERROR
    assert "http.response.status_code" not in (unreachable.attributes or {})
    assert not in_trace()


async def cluster_gone_client(tracer: Tracer, kubeconfig: str) -> None:
    """A request to an API server that stopped: a span without an answer."""
    client = await kube.connect(kubeconfig, tracer)
    try:
        with tracer.start_as_current_span("activity"):
            await client.list_all(kube.PODS, "default")
    finally:
        await client.close()


async def test_a_rayservice_cluster_carries_the_trace_that_created_it(
    tmp_path: Path, tracer: Tracer
) -> None:
    # (A RayJob's cluster: tests/worker/test_tracing_stack.py.)
    async with DevCluster(tmp_path / "cluster") as cluster:
        client = await kube.connect(str(cluster.kubeconfig_path), tracer)
        try:
            await install_crds(client)
            acts = ServiceActivities(client)
            ref = await make_service(client)
            goal = (await run(acts.read, service_contract.ReadServiceInput(ref=ref))).goal_hash
            name = f"{ref.name}-abcde"
            create = service_contract.CreateServiceClusterInput(ref=ref, name=name, goal_hash=goal)
            with tracer.start_as_current_span("RunActivity") as span:
                await run(acts.create_cluster, create)
            created = await client.get(kube.RAYCLUSTERS, "default", name)
        finally:
            await client.close()

    traceparent = traceparent_of(created)
    assert traceparent is not None
    assert traceparent.split("-")[1] == format(span.get_span_context().trace_id, "032x")
