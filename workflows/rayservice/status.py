"""RayService status as a pure function of one pass (KubeRay's `calculateStatus`, S9, S17).

The pass reads the clusters, the Serve statuses and the endpoints first; this module only
computes. The status transitions KubeRay commits on their own (suspend steps, validation
failure, the initializing timeout) are small functions here too, so the workflow never edits
conditions itself.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from activities.dashboard.contract import ServeStatus
from crds.common import Condition
from crds.enums import ConditionStatus, ServiceStatus
from crds.enums import RayServiceConditionReason as Reason
from crds.enums import RayServiceConditionType as Cond
from crds.raycluster import RayClusterStatus
from crds.rayservice import AppStatus, RayServiceStatus, RayServiceStatuses, ServeDeploymentStatus
from workflows import messages
from workflows.conditions import find_condition, is_true, remove_condition, set_condition

_T, _F, _U = ConditionStatus.TRUE, ConditionStatus.FALSE, ConditionStatus.UNKNOWN

UPGRADE_ABORTED = "UpgradeAborted"
"""Ours: UpgradeInProgress=False because an upgrade phase missed its deadline (P6)."""
ROLLBACK_REQUESTED = "RollbackRequested"
"""Ours: RollbackInProgress=True because a person sent the `rollback` signal."""
ROLLED_BACK = "RolledBack"
"""Ours: UpgradeInProgress=False because the goal spec was rolled back (until it changes)."""


class ClusterSide(BaseModel):
    """What one pass knows of the active or the pending cluster."""

    model_config = ConfigDict(frozen=True)

    name: str = ""
    cluster_status: RayClusterStatus | None = None
    serve: ServeStatus | None = None
    traffic: int | None = None
    capacity: int | None = None
    migrated_at: datetime | None = None


class StatusInputs(BaseModel):
    """Everything `compute_status` needs."""

    model_config = ConfigDict(frozen=True)

    previous: RayServiceStatuses | None
    generation: int
    active: ClusterSide
    pending: ClusterSide
    endpoints: int
    refused: tuple[str, str] | None = None
    """UpgradeInProgress reason and message while the goal is refused (aborted, rolled back)."""
    rollback_reason: str | None = None
    rollback_message: str = "Traffic is returning to the active cluster"
    blocked: str = ""
    """Why the upgrade (or the first deployment) cannot move on; added to the messages."""


def app_statuses(serve: ServeStatus | None) -> dict[str, AppStatus] | None:
    """Serve application statuses in the CR's shape (S5)."""
    if serve is None:
        return None
    return {
        name: AppStatus(
            status=app.status,
            message=app.message or None,
            deployments={
                d: ServeDeploymentStatus(status=dep.status, message=dep.message or None)
                for d, dep in app.deployments.items()
            }
            or None,
        )
        for name, app in serve.applications.items()
    }


def empty_side() -> RayServiceStatus:
    """A side with no cluster, as KubeRay writes it."""
    return RayServiceStatus(ray_cluster_status=RayClusterStatus.zero())


def _side(side: ClusterSide) -> RayServiceStatus:
    return RayServiceStatus(
        ray_cluster_name=side.name or None,
        ray_cluster_status=side.cluster_status or RayClusterStatus.zero(),
        applications=app_statuses(side.serve),
        target_capacity=side.capacity,
        traffic_routed_percent=side.traffic,
        last_traffic_migrated_time=side.migrated_at,
    )


def compute_status(inputs: StatusInputs, now: datetime) -> RayServiceStatuses:
    """The status KubeRay would write after this pass."""
    previous = inputs.previous or RayServiceStatuses()
    status = RayServiceStatuses(
        active_service_status=_side(inputs.active),
        pending_service_status=_side(inputs.pending),
        num_serve_endpoints=inputs.endpoints,
        observed_generation=inputs.generation,
        last_update_time=now,
    )
    status.conditions = _conditions(inputs, previous.conditions, now)
    ready = is_true(status.conditions, Cond.READY)
    status.service_status = ServiceStatus.RUNNING if ready else ServiceStatus.NOT_RUNNING
    return status


def _conditions(
    inputs: StatusInputs, previous: list[Condition] | None, now: datetime
) -> list[Condition]:
    gen = inputs.generation
    conds = list(previous or [])
    if not conds:
        message = "RayService is initializing"
        conds = set_condition(conds, Cond.READY, _F, Reason.INITIALIZING, message, now, gen)
        conds = set_condition(
            conds, Cond.UPGRADE_IN_PROGRESS, _F, Reason.INITIALIZING, message, now, gen
        )
    if inputs.endpoints > 0:
        message = "Number of serve endpoints is greater than 0"
        conds = set_condition(
            conds, Cond.READY, _T, Reason.NON_ZERO_SERVE_ENDPOINTS, message, now, gen
        )
    elif is_true(conds, Cond.READY):
        message = "Number of serve endpoints dropped to 0"
        conds = set_condition(conds, Cond.READY, _F, Reason.ZERO_SERVE_ENDPOINTS, message, now, gen)
    conds = _upgrade_condition(inputs, conds, now)
    conds = _show_blocked(conds, inputs.blocked, now)
    if inputs.rollback_reason:
        message = inputs.rollback_message
        conds = set_condition(
            conds, Cond.ROLLBACK_IN_PROGRESS, _T, inputs.rollback_reason, message, now, gen
        )
    elif is_true(conds, Cond.ROLLBACK_IN_PROGRESS):
        # KubeRay removes the condition when a rollback completes or is cancelled, and leaves
        # the False one that suspend writes in place (S15, S19).
        conds = remove_condition(conds, Cond.ROLLBACK_IN_PROGRESS)
    return conds


def _upgrade_condition(
    inputs: StatusInputs, conds: list[Condition], now: datetime
) -> list[Condition]:
    gen, kind = inputs.generation, Cond.UPGRADE_IN_PROGRESS
    if inputs.active.name and inputs.pending.name:
        message = "Both active and pending Ray clusters exist"
        return set_condition(
            conds, kind, _T, Reason.BOTH_ACTIVE_PENDING_CLUSTERS_EXIST, message, now, gen
        )
    if inputs.active.name:
        if inputs.refused is not None:
            reason, message = inputs.refused
            return set_condition(conds, kind, _F, reason, message, now, gen)
        message = "Active Ray cluster exists and no pending Ray cluster"
        return set_condition(conds, kind, _F, Reason.NO_PENDING_CLUSTER, message, now, gen)
    if inputs.refused is not None:
        reason, message = inputs.refused
        return set_condition(conds, kind, _F, reason, message, now, gen)
    current = find_condition(conds, kind)
    if current is None or current.reason not in (Reason.INITIALIZING, Reason.INITIALIZING_TIMEOUT):
        message = "No active Ray cluster exists, and the RayService is not initializing"
        return set_condition(conds, kind, _U, Reason.NO_ACTIVE_CLUSTER, message, now, gen)
    return conds


_BLOCKED = "; blocked: "


def _show_blocked(conds: list[Condition], blocked: str, now: datetime) -> list[Condition]:
    """Say in the message why the service cannot move on, keeping KubeRay's status and reason.

    The upgrade shows it on UpgradeInProgress, a first deployment on an initializing Ready;
    once unblocked the message goes back to KubeRay's text.
    """
    shown = (
        (Cond.READY, Reason.INITIALIZING),
        (Cond.UPGRADE_IN_PROGRESS, Reason.BOTH_ACTIVE_PENDING_CLUSTERS_EXIST),
    )
    for kind, reason in shown:
        found = find_condition(conds, kind)
        if found is None or found.reason != reason:
            continue
        message = found.message.split(_BLOCKED)[0] + (_BLOCKED + blocked if blocked else "")
        if message != found.message:
            conds = set_condition(
                conds, kind, found.status, reason, message, now, found.observed_generation
            )
    return conds


def validation_failed(
    previous: RayServiceStatuses | None, message: str, now: datetime
) -> RayServiceStatuses:
    """Ready=False/ValidationFailed, the rest untouched (KubeRay writes nothing else)."""
    status = (previous or RayServiceStatuses()).model_copy(deep=True)
    status.conditions = set_condition(
        status.conditions, Cond.READY, _F, Reason.VALIDATION_FAILED, message, now
    )
    status.last_update_time = now
    return status


def initializing_timed_out(
    previous: RayServiceStatuses, message: str, now: datetime
) -> RayServiceStatuses:
    """The terminal InitializingTimeout state: names cleared so the clusters go (S18)."""
    status = previous.model_copy(deep=True)
    status.active_service_status = empty_side()
    status.pending_service_status = empty_side()
    status.conditions = set_condition(
        status.conditions, Cond.READY, _F, Reason.INITIALIZING_TIMEOUT, message, now
    )
    status.service_status = ServiceStatus.NOT_RUNNING
    status.last_update_time = now
    return status


def suspend_begun(
    previous: RayServiceStatuses | None, generation: int, now: datetime
) -> RayServiceStatuses:
    """Step 1 of suspend: Suspending=True and the serving status reset (S19)."""
    status = (previous or RayServiceStatuses()).model_copy(deep=True)
    conds = status.conditions
    why = "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService."
    conds = set_condition(
        conds, Cond.SUSPENDING, _T, Reason.SUSPEND_REQUESTED, why, now, generation
    )
    for kind, message in _SUSPEND_MESSAGES:
        conds = set_condition(conds, kind, _F, Reason.SUSPEND_IN_PROGRESS, message, now, generation)
    status.conditions = conds
    status.active_service_status = empty_side()
    status.pending_service_status = empty_side()
    status.num_serve_endpoints = 0
    status.service_status = ServiceStatus.NOT_RUNNING
    status.observed_generation = generation
    status.last_update_time = now
    return status


def suspend_deleting(previous: RayServiceStatuses, now: datetime) -> RayServiceStatuses:
    """Step 2 of suspend: Suspending stays True while the owned objects are deleted."""
    status = previous.model_copy(deep=True)
    message = "Waiting for all Kubernetes resources owned by this RayService to be deleted."
    status.conditions = set_condition(
        status.conditions, Cond.SUSPENDING, _T, Reason.SUSPEND_IN_PROGRESS, message, now
    )
    status.last_update_time = now
    return status


def suspend_completed(previous: RayServiceStatuses, now: datetime) -> RayServiceStatuses:
    """Step 3 of suspend: every owned object is gone."""
    status = previous.model_copy(deep=True)
    message = "All owned resources have been deleted."
    conds = set_condition(
        status.conditions, Cond.SUSPENDING, _F, Reason.SUSPEND_COMPLETE, message, now
    )
    conds = set_condition(conds, Cond.SUSPENDED, _T, Reason.SUSPEND_COMPLETE, message, now)
    for kind, text in _SUSPEND_MESSAGES:
        conds = set_condition(
            conds, kind, _F, Reason.SUSPEND_COMPLETE, text.replace("suspending", "suspended"), now
        )
    status.conditions = conds
    status.last_update_time = now
    return status


def resumed(previous: RayServiceStatuses, generation: int, now: datetime) -> RayServiceStatuses:
    """Suspended=False; Ready and UpgradeInProgress start over, re-arming the timeout."""
    status = previous.model_copy(deep=True)
    message = "RayService is initializing after resuming from suspend."
    conds = set_condition(
        status.conditions,
        Cond.SUSPENDED,
        _F,
        Reason.RESUMED,
        "Spec.Suspend is false; RayService has resumed.",
        now,
        generation,
    )
    for kind in (Cond.READY, Cond.UPGRADE_IN_PROGRESS):
        conds = remove_condition(conds, kind)  # a fresh transition time, as KubeRay forces
        conds = set_condition(conds, kind, _F, Reason.INITIALIZING, message, now, generation)
    status.conditions = conds  # RollbackInProgress stays False/SuspendComplete, as in KubeRay
    status.observed_generation = generation
    status.last_update_time = now
    return status


_SUSPEND_MESSAGES = (
    (Cond.READY, "RayService is suspending."),
    (Cond.UPGRADE_IN_PROGRESS, "No upgrade in progress."),
    (Cond.ROLLBACK_IN_PROGRESS, "No rollback in progress."),
)


def status_changed(old: RayServiceStatuses | None, new: RayServiceStatuses) -> bool:
    """Whether `new` says anything `old` does not (ignoring `lastUpdateTime`)."""
    if old is None:
        return True
    ignore = {"last_update_time"}
    return old.model_dump(exclude=ignore) != new.model_dump(exclude=ignore)


def headline(status: RayServiceStatuses | None, upgrading: bool) -> str:
    """The `RayState` search attribute: Ready, NotReady, Upgrading, Suspended and so on."""
    conds = status.conditions if status else None
    for kind in (Cond.SUSPENDED, Cond.SUSPENDING):
        if is_true(conds, kind):
            return str(kind)
    ready = find_condition(conds, Cond.READY)
    if ready is not None and ready.reason in (
        Reason.VALIDATION_FAILED,
        Reason.INITIALIZING_TIMEOUT,
    ):
        return ready.reason
    if upgrading:
        return "Upgrading"
    if ready is None or ready.reason == Reason.INITIALIZING:
        return messages.FIRST_HEADLINE["RayService"]
    return "Ready" if ready.status == _T else "NotReady"
