"""Kubernetes Events on our objects, as KubeRay records them (what `kubectl describe` shows).

Events are written to the core/v1 API, the one `kubectl describe` reads. An Event's name is
derived from the activity attempt that records it, so an activity that runs twice after a
worker crash records the Event once.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.vocabulary import EventType
from crds.common import format_time
from crds.messages import EVENT_MESSAGE_LIMIT, clipped
from crds.refs import ObjectRef

COMPONENT = "kuberay-temporal"


def event_object(ref: ObjectRef, kind: EventType, reason: str, message: str, key: str) -> kube.JSON:
    """Build a core/v1 Event about `ref`; `key` makes its name unique and repeatable."""
    now = format_time(datetime.now(UTC))
    digest = hashlib.sha1(f"{ref.uid}/{key}/{reason}".encode()).hexdigest()[:16]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{ref.name}.{digest}", "namespace": ref.namespace},
        "involvedObject": {
            "apiVersion": "ray.io/v1",
            "kind": ref.kind,
            "name": ref.name,
            "namespace": ref.namespace,
            "uid": ref.uid,
        },
        "type": kind.value,
        "reason": reason,
        "message": clipped(message, EVENT_MESSAGE_LIMIT),
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


async def record(
    client: KubeClient, ref: ObjectRef, kind: EventType, reason: str, message: str, key: str
) -> None:
    """Record an Event; a second attempt with the same key is a no-op."""
    await client.create_or_get(
        kube.EVENTS, ref.namespace, event_object(ref, kind, reason, message, key)
    )
