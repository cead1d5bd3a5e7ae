"""Pure RayService decisions: which cluster move, when to re-apply Serve, what to delete.

KubeRay behaviours S4, S5, S10–S12, S16, S18, S19 (docs/kuberay-parity.md). Every function
takes what it needs, time included, and returns data; the workflows only carry out the answers.
Unlike KubeRay, the "applied Serve config" and the deletion times are workflow state, so a
restart changes none of these answers (P8, P10).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from activities.rayservice.contract import ClusterView
from crds import constants
from crds.common import Condition
from crds.enums import ConditionStatus
from crds.enums import RayServiceConditionReason as Reason
from crds.enums import RayServiceConditionType as Cond
from crds.enums import RayServiceUpgradeType as Upgrade
from crds.rayservice import RayServiceSpec
from crds.validation import formats
from workflows import durations
from workflows.conditions import find_condition, is_true

HEALTHY_OBSERVATIONS = 3
"""Consecutive all-RUNNING polls before traffic moves to a cluster (P7)."""


class ClusterMove(StrEnum):
    """What the active cluster needs, given the goal spec."""

    NONE = "None"
    CREATE_FIRST = "CreateFirst"
    UPDATE_IN_PLACE = "UpdateInPlace"
    UPGRADE = "Upgrade"
    REFUSED = "Refused"
    """The goal was rolled back or its upgrade aborted; wait for a new spec."""


class SuspendPhase(StrEnum):
    """Where the RayService is in KubeRay's atomic suspend sequence (S19)."""

    NONE = "None"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"


class SuspendStep(StrEnum):
    """What this pass does about suspension."""

    NONE = "None"
    BEGIN = "Begin"
    """Commit Suspending=True (and reset the status) before deleting anything."""
    DELETE = "Delete"
    COMPLETE = "Complete"
    STAY = "Stay"
    RESUME = "Resume"


class DeletionPlan(BaseModel):
    """Deletion deadlines of clusters no longer active or pending, and the ones due now."""

    model_config = ConfigDict(frozen=True)

    scheduled: dict[str, datetime]
    due: list[str]


def upgrade_type(spec: RayServiceSpec, zero_downtime: bool = True) -> Upgrade:
    """`spec.upgradeStrategy.type`; when unset, NewCluster (S12).

    Unset means None instead when the operator turned zero-downtime upgrades off
    (KubeRay's ENABLE_ZERO_DOWNTIME=false, reported in the read snapshot).
    """
    strategy = spec.upgrade_strategy
    if strategy and strategy.type:
        return strategy.type
    return Upgrade.NEW_CLUSTER if zero_downtime else Upgrade.NONE


def is_incremental(spec: RayServiceSpec) -> bool:
    """Whether upgrades shift traffic step by step through the Gateway (S13)."""
    return upgrade_type(spec) == Upgrade.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE


def deletion_delay(spec: RayServiceSpec) -> timedelta:
    """`rayClusterDeletionDelaySeconds`, 60 s by default (S16)."""
    seconds = spec.ray_cluster_deletion_delay_seconds
    if seconds is None:
        seconds = constants.DEFAULT_RAYCLUSTER_DELETION_DELAY_SECONDS
    return durations.seconds(max(seconds, 0))


def appends_worker_groups(cluster: ClusterView, goal_hash: str) -> bool:
    """KubeRay's partial hash match: the goal only adds worker groups at the end (S10, S11)."""
    return (
        cluster.spec_hash != goal_hash
        and bool(cluster.goal_prefix_hash)
        and cluster.goal_prefix_hash == cluster.spec_hash
    )


def cluster_move(
    goal_hash: str, active: ClusterView | None, kind: Upgrade, refused_hash: str | None
) -> ClusterMove:
    """What to do about the serving cluster when no upgrade is running (S10–S12)."""
    if goal_hash == refused_hash:
        return ClusterMove.REFUSED
    if active is None:
        return ClusterMove.CREATE_FIRST
    if active.spec_hash == goal_hash:
        # An operator upgrade changes the version annotation only: update, never replace (#2315).
        if active.kuberay_version != constants.KUBERAY_VERSION:
            return ClusterMove.UPDATE_IN_PLACE
        return ClusterMove.NONE
    if appends_worker_groups(active, goal_hash):
        return ClusterMove.UPDATE_IN_PLACE
    if kind == Upgrade.NONE:
        return ClusterMove.NONE
    return ClusterMove.UPGRADE


def serve_apply_reason(applied_hash: str | None, goal_hash: str, app_count: int) -> str | None:
    """Why the Serve config must be PUT again to a cluster, or None (S4, P8)."""
    if not goal_hash:
        return None
    if applied_hash is None:
        return "nothing has been applied to the cluster yet"
    if app_count == 0:
        return "no Serve application found: the head may have restarted without GCS FT"
    if applied_hash != goal_hash:
        return "serveConfigV2 changed"
    return None


def next_streak(streak: int, healthy: bool) -> int:
    """Consecutive healthy observations after one more (a single unhealthy one resets)."""
    return streak + 1 if healthy else 0


def schedule_deletions(
    owned: list[str],
    keep: set[str],
    scheduled: dict[str, datetime],
    delay: timedelta,
    now: datetime,
) -> DeletionPlan:
    """Give every owned cluster outside `keep` a deletion time, and say which are due (S16).

    A deadline, once given, stays (it is workflow state, not operator memory), and a deadline
    of a cluster that is gone or kept again is dropped.
    """
    plan: dict[str, datetime] = {}
    for name in owned:
        if name in keep:
            continue
        at = scheduled.get(name) or durations.after(now, delay)
        if at is not None:  # None: a delay past the year 9999, never due
            plan[name] = at
    due = sorted(name for name, at in plan.items() if at <= now)
    return DeletionPlan(scheduled=plan, due=due)


def initializing_timeout(annotations: dict[str, str]) -> timedelta | None:
    """`ray.io/initializing-timeout` as a duration ("30m") or integer seconds (S18)."""
    value = annotations.get(constants.ANNOTATION_INITIALIZING_TIMEOUT)
    if not value:
        return None
    nanos = formats.parse_duration_or_seconds(value)
    return timedelta(microseconds=nanos // 1000) if nanos is not None and nanos > 0 else None


def initializing_deadline(
    annotations: dict[str, str], conditions: list[Condition] | None
) -> datetime | None:
    """When an initializing RayService fails for good, if it is initializing with a timeout."""
    timeout = initializing_timeout(annotations)
    ready = find_condition(conditions, Cond.READY)
    if timeout is None or ready is None:
        return None
    if ready.status != ConditionStatus.FALSE or ready.reason != Reason.INITIALIZING:
        return None
    return durations.after(ready.last_transition_time, timeout)


def timed_out(conditions: list[Condition] | None) -> bool:
    """Whether the RayService is in the terminal InitializingTimeout state."""
    ready = find_condition(conditions, Cond.READY)
    return (
        ready is not None
        and ready.status == ConditionStatus.FALSE
        and ready.reason == Reason.INITIALIZING_TIMEOUT
    )


def suspend_phase(conditions: list[Condition] | None) -> SuspendPhase:
    """The suspend phase the stored conditions commit to."""
    if is_true(conditions, Cond.SUSPENDED):
        return SuspendPhase.SUSPENDED
    if is_true(conditions, Cond.SUSPENDING):
        return SuspendPhase.SUSPENDING
    return SuspendPhase.NONE


def suspend_step(phase: SuspendPhase, suspend: bool, leftovers: int) -> SuspendStep:
    """KubeRay's three-step suspend; once Suspending is stored it runs to the end (S19)."""
    if phase == SuspendPhase.SUSPENDED:
        return SuspendStep.STAY if suspend else SuspendStep.RESUME
    if phase == SuspendPhase.SUSPENDING:
        return SuspendStep.DELETE if leftovers else SuspendStep.COMPLETE
    return SuspendStep.BEGIN if suspend else SuspendStep.NONE


def rollback_wanted(goal_hash: str, pending_hash: str) -> bool:
    """Spec-driven rollback of an incremental upgrade (S15).

    The goal went back to the active spec, or on to a third spec: either way the traffic
    returns to the active cluster first. Back at the pending spec, the upgrade resumes.
    """
    return goal_hash != pending_hash


FOLLOW_UP_MIN = timedelta(seconds=3)
FOLLOW_UP_MAX = timedelta(seconds=300)


def follow_up_delay(serving: bool, not_serving_for: timedelta) -> timedelta | None:
    """When to look again at an active cluster that does not serve yet, or None.

    No watch reports Serve health or endpoint readiness, and KubeRay requeues every 2 s for
    them (S1). Here the delay is an eighth of how long the cluster has not been serving,
    between 3 s and 5 min: a head restarted without GCS FT is served again within seconds of
    its apps running, while a service that never gets healthy costs a number of passes that
    grows with the logarithm of the time, not linearly.
    """
    if serving:
        return None
    return min(max(not_serving_for / 8, FOLLOW_UP_MIN), FOLLOW_UP_MAX)
