"""What one reconcile pass of a RayCluster decides.

Plans name things (pods, groups, reasons) instead of carrying manifests: the activity builds
the objects from the CR it reads, so a pass adds a few hundred bytes to the workflow history,
not the pod templates.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from activities.raycluster.contract import PodCreation, PodDeletion


class SuspendPhase(StrEnum):
    """Where the cluster is in KubeRay's atomic suspend sequence."""

    NONE = "None"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"


class PodPlan(BaseModel):
    """Pod changes for one pass, applied in field order: delete-all, deletions, creations."""

    delete_all_reason: str | None = None
    deletions: list[PodDeletion] = Field(default_factory=list)
    creations: list[PodCreation] = Field(default_factory=list)
    stopped: str | None = None
    """Why the pass stopped early (KubeRay returns an error at the same points)."""
    waiting: list[str] = Field(default_factory=list)
    """Human notes on what the cluster is waiting for, for the workflow's current details."""
    creating: list[str] = Field(default_factory=list)
    """Notes on the pods the plan creates: waited for too until a pass has seen them."""
    unfinished: bool = False
    """The plan holds as many pod changes as one pass makes; the next pass makes the rest."""

    @property
    def empty(self) -> bool:
        """Whether the plan changes nothing."""
        return not (self.delete_all_reason or self.deletions or self.creations)


class Expectation(BaseModel):
    """Pods a group was told to gain or lose and that the API has not shown yet.

    KubeRay keeps these in operator memory and loses them on restart; here they are workflow
    state, so a restarted worker never double-creates or double-deletes.
    """

    creates: list[str] = Field(default_factory=list)
    deletes: list[str] = Field(default_factory=list)
    since: datetime
