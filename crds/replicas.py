"""How many Ray workers a spec asks for: KubeRay's replica arithmetic in one place.

The workflow (how many pods to create), the status (desired/min/max worker replicas) and the
validation rules all need the same answer, so it lives beside the models.
"""

from __future__ import annotations

from crds.raycluster import RayClusterSpec, WorkerGroupSpec

# KubeRay's CRD default for maxReplicas: the largest int32.
MAX_REPLICAS_DEFAULT = 2**31 - 1


def hosts(group: WorkerGroupSpec) -> int:
    """Pods per replica: `numOfHosts`, at least 1."""
    return max(group.num_of_hosts or 1, 1)


def desired_replicas(group: WorkerGroupSpec) -> int:
    """Replicas KubeRay runs for a group: `replicas` clamped to [min, max]; 0 when suspended.

    A missing `replicas` counts as `minReplicas` (the API server defaults it to 0 and KubeRay
    clamps that up to the minimum).
    """
    return 0 if group.suspend else requested_replicas(group)


def requested_replicas(group: WorkerGroupSpec) -> int:
    """Replicas the group asks for, suspended or not: `replicas` clamped to [min, max]."""
    low = group.min_replicas or 0
    high = group.max_replicas if group.max_replicas is not None else MAX_REPLICAS_DEFAULT
    # The minimum wins over the maximum when they conflict, as in KubeRay.
    if group.replicas is None or group.replicas < low:
        return low
    return min(group.replicas, high)


def desired_pods(group: WorkerGroupSpec) -> int:
    """Worker pods a group should have: replicas × hosts."""
    return desired_replicas(group) * hosts(group)


def desired_worker_pods(spec: RayClusterSpec) -> int:
    """Worker pods the whole cluster should have."""
    return sum(desired_pods(g) for g in spec.worker_group_specs or [])


def min_worker_pods(spec: RayClusterSpec) -> int:
    """`status.minWorkerReplicas`: minReplicas × hosts summed over non-suspended groups."""
    return sum(
        (g.min_replicas or 0) * hosts(g) for g in spec.worker_group_specs or [] if not g.suspend
    )


def max_worker_pods(spec: RayClusterSpec) -> int:
    """`status.maxWorkerReplicas`, saturating at int32 like KubeRay."""
    total = 0
    for group in spec.worker_group_specs or []:
        if group.suspend:
            continue
        high = group.max_replicas if group.max_replicas is not None else MAX_REPLICAS_DEFAULT
        total += high * hosts(group)
    return min(total, MAX_REPLICAS_DEFAULT)
