"""Every activity the worker registers, bound to the clients it needs.

Activities that talk to an external system are methods of a class built with its client
(STYLE convention 4); this function builds those objects and returns their bound methods, so
the worker only has to pass the clients in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities.builders import DEFAULT_OPTIONS, BuildOptions
from activities.cluster_cleanup import ClusterCleanupActivities
from activities.clusters import ClusterActivities
from activities.kube import KubeClient


def build_activities(
    kube: KubeClient | None, options: BuildOptions = DEFAULT_OPTIONS
) -> list[Callable[..., Any]]:
    """Return the activity callables to register on the worker.

    Args:
        kube: The Kubernetes API; None registers no Kubernetes activities (a worker that
            only runs the diagnostic workflow).
        options: Operator-wide switches for the object builders.

    Returns:
        Functions decorated with `@activity.defn`.
    """
    if kube is None:
        return []
    return [
        *ClusterActivities(kube, options).activities(),
        *ClusterCleanupActivities(kube, options).activities(),
    ]
