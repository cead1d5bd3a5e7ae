"""What the RayCronJob workflow remembers, in one model carried across continue-as-new."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from activities.raycronjob.contract import ScheduleWanted
from crds.refs import ObjectRef

MAX_DECISIONS_KEPT = 10


class Synced(BaseModel):
    """What the Schedule was last made to say."""

    model_config = ConfigDict(frozen=True)

    wanted: ScheduleWanted | None
    paused: bool
    note: str = ""


class RayCronJobState(BaseModel):
    """The workflow's memory of one RayCronJob."""

    generation: int = 0
    """Generation last read (0 until the first read)."""
    dirty: bool = True
    """A pass is due (signals set it; the first pass is always due)."""
    resync: bool = False
    """The next pass writes the Schedule even if nothing changed (the bridge resynced)."""
    gone: bool = False
    user_suspend: bool | None = None
    """A pending suspend (True) or resume (False) request from a person."""
    synced: Synced | None = None
    headline: str = ""
    reported_generation: int = 0
    """The generation whose violations are in an InvalidRayCronJobSpec Event already."""
    last_schedule: str = ""
    """The last firing time the CR's status shows, for the progress query."""
    decisions: list[str] = Field(default_factory=list)
    passes: int = 0

    def remember(self, decision: str) -> None:
        """Keep the last few decisions for the progress query and the CLI."""
        self.decisions = [*self.decisions, decision][-MAX_DECISIONS_KEPT:]


class RayCronJobInput(BaseModel):
    """Start (or continue-as-new) input of the RayCronJob workflow."""

    ref: ObjectRef
    state: RayCronJobState | None = None
