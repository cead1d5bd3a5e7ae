"""Client spans for the Kubernetes and Ray dashboard calls, and a trace carried on created CRs.

Every Kubernetes request goes through `KubeClient._send` and every dashboard request through
one `httpx.AsyncClient`, so a span around each of those two places covers all of the
operator's HTTP. They are ordinary OpenTelemetry CLIENT spans with the stable HTTP semantic
attributes, and the request carries a W3C `traceparent` header, so an API server or a proxy
that traces joins the same trace. Our own spans rather than the generic aiohttp instrumentor:
kubernetes_asyncio builds its `aiohttp.ClientSession` itself, so the instrumentor could only
reach it by patching every session in the process, including the bridge's five-minute
watches and the metrics scrapes.

A span is made only inside a trace (an activity, a bridge delivery): background calls — the
bridge's lists and watches, the metrics endpoint's lists — would otherwise each be a trace of
one span, many per minute, that nobody asked for.

A RayJob's or RayService's RayCluster is driven by a workflow of its own, which the bridge
starts on the cluster's first event. For the cluster's work to stay in the trace that created
it, the creating activity writes the trace context into the cluster's annotation
`TRACEPARENT_ANNOTATION`, and the bridge makes it the parent of that cluster's deliveries.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

TRACEPARENT_ANNOTATION: Final = "kuberay-temporal.io/traceparent"
"""Annotation on a created RayCluster: the W3C traceparent of the activity that created it."""

_NO_TRACER: Final = trace.NoOpTracer()


def default_tracer() -> Tracer:
    """The tracer of an unconfigured process: makes no spans."""
    return _NO_TRACER


def in_trace() -> bool:
    """Whether a sampled span is current, i.e. this code runs on behalf of a trace."""
    return trace.get_current_span().get_span_context().is_valid


class HttpCall:
    """One request's span, told the answer by the caller."""

    def __init__(self, span: Span | None) -> None:
        self.span = span
        """The CLIENT span; None outside a trace."""
        self._answered = False

    def answered(self, status: int) -> None:
        """Record the response's status code; 4xx and 5xx mark a client span as failed."""
        self._answered = True
        if self.span is None:
            return
        self.span.set_attribute("http.response.status_code", status)
        if status >= 400:
            self.span.set_attribute("error.type", str(status))
            self.span.set_status(Status(StatusCode.ERROR))

    def failed(self, err: BaseException) -> None:
        """Record a request that got no answer (connection refused, timeout)."""
        if self.span is not None and not self._answered:
            self.span.set_attribute("error.type", type(err).__qualname__)


@contextmanager
def client_span(
    tracer: Tracer, method: str, url: str, headers: MutableMapping[str, str], template: str = ""
) -> Iterator[HttpCall]:
    """A CLIENT span for one HTTP request, with its context injected into `headers`.

    Args:
        tracer: Where spans go.
        method: The HTTP method.
        url: The URL requested, without its query (`url.full`; a query may carry a
            selector or a token nobody meant for a trace backend).
        headers: The request's headers; `traceparent` (and `tracestate`) are added.
        template: The URL's path with identifiers replaced (`url.template`); it also names
            the span, `METHOD template`, as the semantic conventions allow.

    Yields:
        The call, to be told the answer's status; without a span outside a trace.
    """
    if not in_trace():
        yield HttpCall(None)
        return
    parts = urlsplit(url)
    attributes: dict[str, Any] = {
        "http.request.method": method,
        "url.full": url,
        "server.address": parts.hostname or "",
        "server.port": parts.port or (443 if parts.scheme == "https" else 80),
    }
    if template:
        attributes["url.template"] = template
    name = f"{method} {template}" if template else method
    with tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes) as span:
        propagate.inject(headers)
        call = HttpCall(span)
        try:
            yield call
        except Exception as err:
            call.failed(err)
            raise


def kube_path_template(path: str) -> str:
    """A Kubernetes API path with namespace and object name replaced by placeholders.

    `/api/v1/namespaces/ns/pods/p/status` becomes
    `/api/v1/namespaces/{namespace}/pods/{name}/status`: span names stay few (one per kind
    and verb) while `url.full` keeps the actual path.
    """
    parts = path.split("?", 1)[0].strip("/").split("/")
    if len(parts) < 2 or parts[0] not in ("api", "apis"):
        return path
    prefix = 2 if parts[0] == "api" else 3
    out, rest = parts[:prefix], parts[prefix:]
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        out += ["namespaces", "{namespace}"]
        rest = rest[2:]
    if rest:
        out.append(rest[0])
        if len(rest) > 1:
            out += ["{name}", *rest[2:]]
    return "/" + "/".join(out)


def stamp_trace_context(manifest: dict[str, Any]) -> None:
    """Write the current trace's context into `manifest`'s annotations, inside a trace.

    Args:
        manifest: An object about to be created; changed in place.
    """
    if not in_trace():
        return
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    traceparent = carrier.get("traceparent")
    if traceparent:
        metadata = manifest.setdefault("metadata", {})
        annotations = metadata.get("annotations") or {}
        metadata["annotations"] = {**annotations, TRACEPARENT_ANNOTATION: traceparent}


def traceparent_of(obj: dict[str, Any]) -> str | None:
    """The traceparent an object's `TRACEPARENT_ANNOTATION` carries, if any."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    traceparent = annotations.get(TRACEPARENT_ANNOTATION)
    return traceparent if isinstance(traceparent, str) and traceparent else None


def parent_context(traceparent: str | None) -> Context | None:
    """The context to start a span under for a W3C `traceparent`; None if it is not valid."""
    if not traceparent:
        return None
    context = propagate.extract({"traceparent": traceparent})
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


class TracingTransport(httpx.AsyncBaseTransport):
    """An httpx transport that wraps each request in a `client_span`."""

    def __init__(self, inner: httpx.AsyncBaseTransport, tracer: Tracer) -> None:
        self._inner = inner
        self._tracer = tracer

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """See base class."""
        headers: dict[str, str] = {}
        url = str(request.url.copy_with(query=None))
        with client_span(self._tracer, request.method, url, headers) as call:
            request.headers.update(headers)
            response = await self._inner.handle_async_request(request)
            call.answered(response.status_code)
            return response

    async def aclose(self) -> None:
        """See base class."""
        await self._inner.aclose()
