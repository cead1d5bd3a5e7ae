"""Everything the RayJob workflow remembers, in one model carried across continue-as-new.

The RayJob status itself (with its absolute startTime, endTime, rayJobInfo times and failure
timer) is the main memory: every deadline is derived from it, so a continued run re-arms the
same timers. `Attempt` holds what KubeRay cannot know about one attempt (P15): its number,
whether its Ray job was submitted, and the last thing Ray said about it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from activities.rayjob.contract import RayJobView
from crds.rayjob import RayJobSpec, RayJobStatus
from crds.refs import ObjectRef

MAX_DECISIONS_KEPT = 10


class Attempt(BaseModel):
    """One try at running the job: a cluster name, a job id, a submission."""

    number: int = 0
    """1 for the first attempt; each New → Initializing starts the next one."""
    submitted: bool = False
    """HTTPMode: Ray accepted (or already had) this attempt's submission id."""
    job_seen: bool = False
    """Ray has reported this job at least once (so a later 404 means Ray lost it)."""
    head_service: bool = False
    """`<rayjob>-head-svc` points at this attempt's cluster."""
    cluster_to_create: bool = False
    """This attempt named a RayCluster of its own (a new name, with a random part) and has not
    created it yet: until it does, no cluster of that name exists to read."""
    ray_job: RayJobView | None = None
    """What the dashboard said last, if polled in this attempt."""


class RayJobState(BaseModel):
    """The workflow's memory of one RayJob."""

    generation: int = 0
    """Generation of `spec` (0 until the first read)."""
    dirty: bool = True
    """A pass is due (signals set it; the first pass is always due)."""
    deleting: bool = False
    gone: bool = False
    spec: RayJobSpec | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    has_finalizer: bool = False
    rayjob_as_of: int = 0
    """The newest resourceVersion of the RayJob this workflow wrote or the bridge reported."""
    cluster_as_of: int = 0
    """The newest RayCluster resourceVersion the bridge reported (`OwnedChanged.versions`)."""
    status: RayJobStatus | None = None
    attempt: Attempt = Field(default_factory=Attempt)
    user_suspend: bool | None = None
    """A pending suspend (True) or resume (False) request from a person."""
    wake_at: datetime | None = None
    """The next deadline or deletion rule: a pass is due then even without a signal."""
    poll_at: datetime | None = None
    """Do not poll Ray again before this (a quick unchanged answer must not spin)."""
    asked_at: datetime | None = None
    """When Ray was last asked about the job."""
    poll_gap: timedelta = timedelta(seconds=3)
    """The current pause between quick, unchanged answers from Ray (it backs off)."""
    busy: bool = False
    """Something is being torn down: resync sooner than usual."""
    reported_violations: list[str] = Field(default_factory=list)
    waiting: str = ""
    decisions: list[str] = Field(default_factory=list)
    passes: int = 0

    def remember(self, decision: str) -> None:
        """Keep the last few decisions for the progress query and the CLI."""
        self.decisions = [*self.decisions, decision][-MAX_DECISIONS_KEPT:]


class RayJobInput(BaseModel):
    """Start (or continue-as-new) input of the RayJob workflow."""

    ref: ObjectRef
    patches: str | None = None
    """The covering patch the run follows (`messages.WorkflowInput`); None: its markers decide."""
    state: RayJobState | None = None
    max_history_events: int | None = None
    """Continue-as-new once the history is this long, even before Temporal suggests it."""
