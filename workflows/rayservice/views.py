"""Pure read-outs of one pass for the RayService workflow: status inputs, endpoints, details.

Kept out of the workflow class so that the glue stays short and these small derivations are
tested like the other decisions.
"""

from __future__ import annotations

from activities.dashboard.contract import ServeStatus
from activities.rayservice.contract import ServiceSnapshot
from crds.enums import ApplicationStatus
from crds.enums import RayServiceConditionReason as Reason
from crds.refs import ObjectRef
from workflows.rayservice.incremental import Traffic
from workflows.rayservice.state import RayServiceState
from workflows.rayservice.status import ClusterSide, StatusInputs


def active_name(state: RayServiceState) -> str:
    """The serving cluster's name, "" when there is none."""
    status = state.status
    side = status.active_service_status if status else None
    return (side.ray_cluster_name if side else None) or ""


def serve_endpoints(
    snap: ServiceSnapshot, ref: ObjectRef, active: str, pending: str, incremental: bool
) -> int:
    """numServeEndpoints: the RayService's serve Service, or the per-cluster ones (S14, S17).

    Incremental services count `<cluster>-serve-svc` of both clusters once one is active.
    """
    if not incremental or not active:
        # The user's serveService may name it otherwise (older snapshots do not say: default).
        return snap.serve_endpoints.get(snap.serve_service or f"{ref.name}-serve-svc", 0)
    names = (active, pending)
    return sum(snap.serve_endpoints.get(f"{name}-serve-svc", 0) for name in names if name)


def status_inputs(
    state: RayServiceState,
    snap: ServiceSnapshot,
    ref: ObjectRef,
    active_serve: ServeStatus | None,
    incremental: bool,
) -> StatusInputs:
    """What `compute_status` needs after this pass."""
    active = active_name(state)
    upgrade = state.upgrade
    pending = upgrade.pending if upgrade else ""
    traffic: Traffic | None = None
    if incremental:
        traffic = (upgrade.progress.traffic if upgrade else None) or state.traffic or Traffic()
    active_view, pending_view = snap.cluster(active), snap.cluster(pending)
    rollback: str | None = None
    rollback_message = "Traffic is returning to the active cluster"
    if upgrade is not None:
        if upgrade.aborting:
            rollback = upgrade.aborting
        elif upgrade.progress.rolling_back:
            rollback = Reason.DESIRED_CLUSTER_SPEC_CHANGED
            # KubeRay's two messages: the goal went back to the active spec, or on to a third.
            if active_view is not None and active_view.spec_hash == state.goal_hash:
                rollback_message = "Goal state reverted to original cluster, rolling back."
            else:
                rollback_message = (
                    "Goal state changed mid-upgrade, rolling back to original cluster."
                )
    return StatusInputs(
        previous=state.status,
        generation=state.generation,
        active=ClusterSide(
            name=active,
            cluster_status=active_view.status if active_view else None,
            serve=active_serve,
            traffic=traffic.active_weight if traffic and active else None,
            capacity=traffic.active_capacity if traffic and active else None,
            migrated_at=traffic.migrated_at if traffic and active else None,
        ),
        pending=ClusterSide(
            name=pending,
            cluster_status=pending_view.status if pending_view else None,
            serve=upgrade.progress.pending_serve if upgrade else None,
            traffic=traffic.pending_weight if traffic and pending else None,
            capacity=traffic.pending_capacity if traffic and pending else None,
            migrated_at=traffic.migrated_at if traffic and pending else None,
        ),
        endpoints=serve_endpoints(snap, ref, active, pending, incremental),
        refused=state.refused if state.goal_hash == state.refused_hash else None,
        rollback_reason=rollback,
        rollback_message=rollback_message,
        blocked=upgrade.progress.blocked if upgrade else "",
    )


def details(ref: ObjectRef, headline: str, state: RayServiceState) -> str:
    """The workflow's current details: one line of what it does, then what it waits for."""
    lines = [f"**{ref}**: {headline}"]
    upgrade = state.upgrade
    if upgrade is not None:
        serve = upgrade.progress.pending_serve
        apps = serve.applications if serve else {}
        running = sum(1 for app in apps.values() if app.status == ApplicationStatus.RUNNING)
        line = f"upgrading: pending cluster {upgrade.pending} {running}/{len(apps)} apps RUNNING"
        traffic = upgrade.progress.traffic
        if traffic is not None:
            line += f", {traffic.pending_weight}% traffic"
        lines.append(f"{line} ({upgrade.progress.phase})")
    lines += [f"waiting for {w}" for w in state.waiting]
    return "\n\n".join(lines)
