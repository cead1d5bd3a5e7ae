"""What the RayService workflow and its upgrade child remember and tell each other.

`RayServiceState` is carried across continue-as-new whole: the Serve config applied to each
cluster (P8), the deletion deadline of each retired cluster (P10), the goal hash a person
rolled back or an aborted upgrade left behind (so a later pass does not undo it). The upgrade
child's input, progress and result are small models too, so both histories stay readable.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, Field

from activities.dashboard.contract import ServeStatus
from crds.rayservice import RayServiceSpec, RayServiceStatuses
from crds.refs import ObjectRef
from workflows.rayservice.incremental import Options, Traffic

MAX_DECISIONS_KEPT = 10

UPGRADE_PROGRESS = "upgrade_progress"
"""Signal from the upgrade child to its parent: a phase changed."""
GOAL_CHANGED = "goal_changed"
"""Signal from the parent to the upgrade child: the goal spec hash changed."""
ABORT = "abort"
"""Signal from the parent to the upgrade child: return the traffic and remove the pending
cluster (a person's rollback, suspend, deletion, the initializing timeout)."""


class Outcome(StrEnum):
    """How an upgrade child ended."""

    PROMOTED = "Promoted"
    ROLLED_BACK = "RolledBack"
    ABORTED = "Aborted"
    """A phase missed its deadline (P6)."""
    SUPERSEDED = "Superseded"
    """A newer goal spec arrived before the pending cluster served (S10)."""


class UpgradeInput(BaseModel):
    """Start of an upgrade child `…/upgrade/<n>`: move serving from `active` to `pending`."""

    ref: ObjectRef
    number: int
    incremental: bool = False
    active: str | None = None
    """None for the first deployment."""
    pending: str
    goal_hash: str
    serve_config_hash: str = ""
    """The serveConfigV2 hash when the upgrade started (the child re-applies on drift)."""
    options: Options = Field(default_factory=Options)
    ready_timeout: timedelta = timedelta(minutes=30)
    """How long the pending cluster's head may take to become ready."""
    healthy_timeout: timedelta = timedelta(minutes=30)
    """How long its Serve applications may take to run (per traffic step when incremental)."""
    healthy_observations: int = 3
    deletion_delay: timedelta = timedelta(seconds=60)


class UpgradeProgress(BaseModel):
    """What the child reports to the parent (and answers to `progress`)."""

    number: int = 0
    phase: str = "starting"
    pending: str = ""
    pending_serve: ServeStatus | None = None
    traffic: Traffic | None = None
    rolling_back: bool = False
    applied: dict[str, str] = Field(default_factory=dict)
    """Serve config hash PUT to each cluster by the child."""
    blocked: str = ""
    """Why the upgrade cannot move on right now (the Gateway API is missing), for the status."""


class UpgradeResult(BaseModel):
    """How an upgrade child ended, and what the parent takes over."""

    outcome: Outcome
    pending: str
    reason: str = ""
    applied: dict[str, str] = Field(default_factory=dict)
    traffic: Traffic | None = None


class GoalChanged(BaseModel):
    """The goal spec hash the parent read most recently."""

    goal_hash: str


class AbortRequest(BaseModel):
    """Why the parent stops the upgrade."""

    reason: str
    rollback: bool = True


class UpgradeRecord(BaseModel):
    """The running upgrade child, as the parent knows it."""

    number: int
    child_id: str
    pending: str
    goal_hash: str
    progress: UpgradeProgress = Field(default_factory=UpgradeProgress)
    forwarded_goal: str = ""
    aborting: str | None = None
    """RollbackInProgress reason once the parent asked the child to abort."""


class RayServiceState(BaseModel):
    """The workflow's memory of one RayService."""

    generation: int = 0
    dirty: bool = True
    gone: bool = False
    spec: RayServiceSpec | None = None
    annotations: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    status: RayServiceStatuses | None = None
    goal_hash: str = ""
    serve_config_hash: str = ""
    applied: dict[str, str] = Field(default_factory=dict)
    """Serve config hash applied to each cluster (KubeRay's in-memory cache, made durable)."""
    streaks: dict[str, int] = Field(default_factory=dict)
    """Consecutive healthy Serve observations per cluster (P7)."""
    deletions: dict[str, datetime] = Field(default_factory=dict)
    """When each retired cluster is deleted (P10: survives restarts and continue-as-new)."""
    refused_hash: str | None = None
    refused: tuple[str, str] | None = None
    """UpgradeInProgress reason and message while `refused_hash` is the goal."""
    upgrades: int = 0
    upgrade: UpgradeRecord | None = None
    traffic: Traffic | None = None
    """Incremental capacities and weights after the last upgrade (active at 100 %)."""
    user_suspend: bool | None = None
    rollback_request: str | None = None
    """A person's pending `rollback` (its reason)."""
    reported_violations: list[str] = Field(default_factory=list)
    waiting: list[str] = Field(default_factory=list)
    decisions: list[str] = Field(default_factory=list)
    passes: int = 0
    wake_at: datetime | None = None
    not_serving_since: datetime | None = None
    """Since when the active cluster has not been serving (`rules.follow_up_delay`)."""

    def remember(self, decision: str) -> None:
        """Keep the last few decisions for the progress query."""
        self.decisions = [*self.decisions, decision][-MAX_DECISIONS_KEPT:]


class RayServiceInput(BaseModel):
    """Start (or continue-as-new) input of the RayService workflow."""

    ref: ObjectRef
    state: RayServiceState | None = None
    max_history_events: int | None = None
    """Continue-as-new once the history is this long, even before Temporal suggests it."""
    ready_timeout: timedelta = timedelta(minutes=30)
    healthy_timeout: timedelta = timedelta(minutes=30)
