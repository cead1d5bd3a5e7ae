"""The closed sets of values of the Kubernetes API that this code writes or compares against.

The values are the wire strings of core/v1, batch/v1 and the watch protocol; as `StrEnum`
members they compare equal to, and serialise as, those strings. Kept apart
from `activities.kube.client` so that workflow code can name them without importing the
Kubernetes client.
"""

from __future__ import annotations

from enum import StrEnum


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
