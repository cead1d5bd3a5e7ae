"""Signals every CR workflow accepts, the progress each reports, the attributes it is listed by.

The bridge sends `spec_changed`, `owned_changed` and `deleted`; people send `suspend`,
`resume` and `rollback` from the Temporal UI, `temporal workflow signal` or our CLI.

Signals are nudges, not data: `spec_changed` carries the generation and nothing of the spec.
The workflow reads the CR itself at the start of the pass it triggers, so it always acts on
the latest spec (several quick edits collapse into one pass), and a spec — often tens of
kilobytes of pod templates — is written to the history only when the workflow actually reads
a new generation, instead of once per signal.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from temporalio.common import SearchAttributeKey

from crds.refs import ObjectRef

SPEC_CHANGED = "spec_changed"
OWNED_CHANGED = "owned_changed"
DELETED = "deleted"
SUSPEND = "suspend"
RESUME = "resume"
ROLLBACK = "rollback"
PROGRESS = "progress"

# The search attributes the bridge starts a workflow with and the workflow keeps current
# (`worker.search_attributes` registers them).
RAY_KIND = SearchAttributeKey.for_keyword("RayKind")
"""The CR's kind: RayCluster, RayJob, RayService or RayCronJob."""

RAY_NAMESPACE = SearchAttributeKey.for_keyword("RayNamespace")
"""The CR's Kubernetes namespace."""

RAY_NAME = SearchAttributeKey.for_keyword("RayName")
"""The CR's name."""

RAY_STATE = SearchAttributeKey.for_keyword("RayState")
"""The CR's headline state (cluster state, jobDeploymentStatus, service status)."""

FIRST_HEADLINE = {
    "RayCluster": "provisioning",
    "RayJob": "Initializing",
    "RayService": "Initializing",
    "RayCronJob": "Scheduled",
}
"""Each kind's `RayState` before its first status: the bridge starts a workflow with it, so the
workflow's first pass upserts nothing (one action fewer) unless the state has moved on. A
RayJob's is the state its first pass writes (KubeRay's first step), not the empty one before."""


COVERING_PATCHES = {
    "RayCluster": "raycluster-patches-through-suspend-steps",
    "RayJob": "rayjob-patches-through-early-timer",
}
"""Each kind's newest covering patch (`workflows.patches`), for the kinds that have one. The
bridge starts a workflow with it in the input, so the run follows every patch it stands for
without recording its marker and `TemporalChangeVersion` upsert: an action and two events less
per run."""


class WorkflowInput(BaseModel):
    """How every CR workflow starts: which object it manages, and the patches it follows."""

    ref: ObjectRef
    patches: str | None = None
    """The covering patch the run follows (`COVERING_PATCHES`); None: its markers decide."""


class SpecChanged(BaseModel):
    """The CR's generation (or an annotation/label KubeRay reacts to) changed, or a resync."""

    model_config = ConfigDict(frozen=True)

    generation: int = 0
    resync: bool = False
    version: int = 0
    """The CR's resourceVersion behind the change: a read from the worker's copy waits for it."""


class OwnedChanged(BaseModel):
    """Objects the CR owns changed (pods, Jobs, child RayClusters); coalesced by the bridge."""

    model_config = ConfigDict(frozen=True)

    kinds: list[str] = Field(default_factory=list)
    names: list[str] = Field(default_factory=list)
    versions: dict[str, int] = Field(default_factory=dict)
    """The newest resourceVersion behind the change, by kind: a read from a cache waits for it."""


RAY_JOB_KIND = "Ray job"
"""The kind the worker's watch of running Ray jobs names in `OwnedChanged`: Ray's answer
about the job changed (not an object the CR owns)."""


class Deleted(BaseModel):
    """The CR got a deletionTimestamp (`gone=False`) or disappeared from the API (`gone=True`)."""

    model_config = ConfigDict(frozen=True)

    gone: bool = False
    version: int = 0
    """The CR's resourceVersion that carries the deletionTimestamp (0 when gone)."""


class UserRequest(BaseModel):
    """A person's suspend, resume or rollback; `reason` lands in the Event and the history.

    Unknown fields are refused, not dropped: a typo such as `{"reson": ...}` is reported back
    (`workflows.user_signals`) instead of being taken as an empty request.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str = ""
    requested_by: str = ""


class Progress(BaseModel):
    """What the `progress` query answers: the headline state and what the workflow waits for."""

    ref: ObjectRef
    state: str
    summary: str
    waiting_for: list[str] = Field(default_factory=list)
    last_decisions: list[str] = Field(default_factory=list)
    observed_generation: int = 0
