"""Deliver a batch of signals to a CR's workflow, starting the workflow if it is not running.

Signal-with-start with `ALLOW_DUPLICATE_FAILED_ONLY`: a running workflow gets the
signal; a missing one is started and gets it first; a workflow that *completed* (its CR was
finalized) is never resurrected by a late event, while a terminated or failed one restarts.
Starting and signalling are idempotent, so two bridges, or a bridge replaying its list after a
restart, cost extra signals and nothing else.

How much of the spec travels: none. A signal carries the generation (and for owned objects
their kinds and names), a few dozen bytes. The workflow reads the CR in the pass the signal
triggers and keeps the spec in its state, so a spec — often 10–50 KB of pod templates — enters
the history once per generation actually acted on, not once per signal: a burst of ten edits
costs ten small signals and one spec. It also means the workflow never acts on a stale copy.

Tracing: each delivery is a PRODUCER span, `Deliver:<kind>`, the bridge's part of a trace; the
client's Temporal interceptor (`runtime.telemetry`) carries it in the start and signal headers, so
the workflow's spans and its activities' become its descendants. A delivery for a CR that an
activity created in a trace (`activities.kube.spans.TRACEPARENT_ANNOTATION`) continues that trace.
"""

from __future__ import annotations

import logging

from opentelemetry.trace import SpanKind, Tracer
from opentelemetry.util.types import AttributeValue
from temporalio.client import Client
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError

from activities.kube.spans import default_tracer, parent_context
from bridge.filtering import Signal
from bridge.queueing import Batch
from crds.refs import ObjectRef
from workflows import messages

logger = logging.getLogger(__name__)


class Signaller:
    """Sends batches to workflows on one task queue."""

    def __init__(self, client: Client, task_queue: str, tracer: Tracer | None = None) -> None:
        self._client = client
        self._task_queue = task_queue
        self._tracer = tracer or default_tracer()
        self.sent = 0
        self.refused = 0

    async def running(self, kind: str, namespace: str | None) -> list[ObjectRef]:
        """The CRs of `kind` (in `namespace`, None: all) whose workflows are running."""
        query = f"RayKind='{kind}' AND ExecutionStatus='Running'"
        if namespace is not None:
            query += f" AND RayNamespace='{namespace}'"
        return [ObjectRef.from_workflow_id(w.id) async for w in self._client.list_workflows(query)]

    async def deliver(self, batch: Batch) -> None:
        """Signal-with-start the first signal, then send the rest in order, in one span."""
        signals = batch.signals()
        if not signals:
            return
        ref = batch.target
        if ref.kind not in messages.FIRST_HEADLINE:
            # No workflow of that kind: a retry would fail the same way, forever. The filter
            # sends only to CRs it has seen exist, so this is a bridge bug; said, not raised.
            self.refused += 1
            logger.error(
                "no workflow for kind %s; dropping %s for %s",
                ref.kind,
                ", ".join(name for name, _ in signals),
                ref.workflow_id,
            )
            return
        attributes: dict[str, AttributeValue] = {
            "k8s.namespace.name": ref.namespace,
            "kuberay_temporal.kind": ref.kind,
            "kuberay_temporal.name": ref.name,
            "kuberay_temporal.uid": ref.uid,
            "kuberay_temporal.signals": [name for name, _ in signals],
            "kuberay_temporal.attempt": batch.attempts + 1,
        }
        with self._tracer.start_as_current_span(
            f"Deliver:{ref.kind}",
            context=parent_context(batch.traceparent),
            kind=SpanKind.PRODUCER,
            attributes=attributes,
        ):
            await self._deliver(batch, signals)

    async def _deliver(self, batch: Batch, signals: list[tuple[str, Signal]]) -> None:
        ref = batch.target
        (first, first_arg), rest = signals[0], signals[1:]
        try:
            handle = await self._client.start_workflow(
                ref.kind,
                messages.WorkflowInput(ref=ref, patches=messages.COVERING_PATCHES.get(ref.kind)),
                id=ref.workflow_id,
                task_queue=self._task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                start_signal=first,
                start_signal_args=[first_arg],
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(messages.RAY_KIND, ref.kind),
                        SearchAttributePair(messages.RAY_NAMESPACE, ref.namespace),
                        SearchAttributePair(messages.RAY_NAME, ref.name),
                        SearchAttributePair(messages.RAY_STATE, messages.FIRST_HEADLINE[ref.kind]),
                    ]
                ),
                static_summary=f"{ref.kind} {ref.namespace}/{ref.name}",
            )
        except WorkflowAlreadyStartedError:
            # The workflow of this uid completed: the CR was finalized; this event is stale.
            self.refused += 1
            logger.debug(
                "%s already finished; dropping %s",
                ref.workflow_id,
                first,
                extra={"workflow_id": ref.workflow_id},
            )
            return
        self.sent += 1
        for name, arg in rest:
            await handle.signal(name, arg)
