"""The closed sets of values of the Kubernetes API that this code writes or compares against.

The values are the wire strings of core/v1, batch/v1 and the watch protocol; as `StrEnum`
members they compare equal to, and serialise as, those strings. Kept apart
from `activities.kube.client` so that workflow code can name them without importing the
Kubernetes client.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class EventType(StrEnum):
    """core/v1 Event `type`."""

    NORMAL = "Normal"
    WARNING = "Warning"


class WatchEventType(StrEnum):
    """`type` of one event of a watch stream."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


class PodPhase(StrEnum):
    """core/v1 Pod `status.phase`."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class JobConditionType(StrEnum):
    """batch/v1 Job condition types that mark a finished Job (the only ones read here)."""

    COMPLETE = "Complete"
    FAILED = "Failed"


class PodConditionType(StrEnum):
    """core/v1 Pod condition types read here."""

    READY = "Ready"


class RestartPolicy(StrEnum):
    """core/v1 PodSpec `restartPolicy`."""

    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"


class GatewayConditionType(StrEnum):
    """gateway.networking.k8s.io/v1 condition types that say a Gateway or a route is in use."""

    ACCEPTED = "Accepted"
    PROGRAMMED = "Programmed"
    RESOLVED_REFS = "ResolvedRefs"


GATEWAY_READY: Final = (GatewayConditionType.ACCEPTED, GatewayConditionType.PROGRAMMED)
"""A Gateway serves once both of these are True."""
ROUTE_PARENT_READY: Final = (GatewayConditionType.ACCEPTED, GatewayConditionType.RESOLVED_REFS)
"""An HTTPRoute serves through a parent Gateway once both of these are True on that parent."""
