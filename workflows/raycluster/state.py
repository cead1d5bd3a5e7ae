"""Everything the RayCluster workflow remembers, in one model carried across continue-as-new."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from crds.raycluster import RayCluster, RayClusterSpec, RayClusterStatus
from crds.refs import ObjectRef
from workflows.entity import SETTLED_HISTORY
from workflows.raycluster.plans import Expectation

MAX_DECISIONS_KEPT = 10


class RayClusterState(BaseModel):
    """The workflow's memory of one RayCluster."""

    generation: int = 0
    """Generation of `spec` (0 until the first read)."""
    wanted_generation: int = 0
    """Highest generation the bridge has announced."""
    dirty: bool = True
    """A pass is due (signals set it; the first pass is always due)."""
    gone: bool = False
    spec: RayClusterSpec | None = None
    annotations: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    status: RayClusterStatus | None = None
    expectations: dict[str, Expectation] = Field(default_factory=dict)
    user_suspend: bool | None = None
    """A pending suspend (True) or resume (False) request from a person."""
    reported_violations: list[str] = Field(default_factory=list)
    waiting: list[str] = Field(default_factory=list)
    decisions: list[str] = Field(default_factory=list)
    passes: int = 0
    wake_at: datetime | None = None
    """An absolute deadline that needs a pass even without a signal (kept across CAN)."""
    pods_as_of: int = 0
    """The newest pod resourceVersion the bridge reported (`messages.OwnedChanged.versions`)."""
    pods_seen: int = 0
    """The newest pod version a pass has read (`contract.ClusterSnapshot.pods_seen`)."""
    as_of: int = 0
    """The newest resourceVersion of the RayCluster known: the bridge's news, its own writes."""
    failed_passes: int = 0
    """Passes in a row whose apply failed; the next pass follows after `retry_delay`."""

    def as_cluster(self, ref: ObjectRef) -> RayCluster:
        """The RayCluster as last read, for validation: the spec and the metadata kept."""
        assert self.spec is not None
        meta = ref.meta(self.generation, self.labels, self.annotations)
        return RayCluster(metadata=meta, spec=self.spec)

    def remember(self, decision: str) -> None:
        """Keep the last few decisions for the progress query and the CLI."""
        self.decisions = [*self.decisions, decision][-MAX_DECISIONS_KEPT:]


class RayClusterInput(BaseModel):
    """Start (or continue-as-new) input of the RayCluster workflow."""

    ref: ObjectRef
    patches: str | None = None
    """The covering patch the run follows (`messages.WorkflowInput`); None: its markers decide."""
    state: RayClusterState | None = None
    max_history_events: int | None = None
    """Continue-as-new once the history is this long, even before Temporal suggests it."""
    settled_history_events: int = SETTLED_HISTORY
    """Continue-as-new once the history is this long and nothing is under way."""
