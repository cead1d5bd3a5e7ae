"""Stand-in workflows for the bridge tests, registered under the real workflow type names.

A test double for the CR workflows (the bridge's layer-3 tests need only "a workflow per CR
that hears its signals"): each records the highest generation it was told about and how many
signals it received, and completes when its CR is gone — what the real workflows do with the
same signals, minus the reconciling.
"""

from __future__ import annotations

from pydantic import BaseModel
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows import messages


class Seen(BaseModel):
    generation: int = 0
    signals: int = 0
    owned: int = 0
    gone: bool = False
    patches: str | None = None


class _StandIn:
    @workflow.init
    def __init__(self, params: messages.WorkflowInput) -> None:
        self.seen = Seen(patches=params.patches)

    async def wait_until_gone(self) -> Seen:
        await workflow.wait_condition(lambda: self.seen.gone)
        return self.seen

    @workflow.signal(name=messages.SPEC_CHANGED)
    def spec_changed(self, change: messages.SpecChanged) -> None:
        self.seen.signals += 1
        self.seen.generation = max(self.seen.generation, change.generation)

    @workflow.signal(name=messages.OWNED_CHANGED)
    def owned_changed(self, change: messages.OwnedChanged) -> None:
        self.seen.signals += 1
        self.seen.owned += 1

    @workflow.signal(name=messages.DELETED)
    def deleted(self, change: messages.Deleted) -> None:
        self.seen.signals += 1
        self.seen.gone = self.seen.gone or change.gone

    @workflow.query(name="seen")
    def query_seen(self) -> Seen:
        return self.seen


@workflow.defn(name="RayCluster")
class RayClusterStandIn(_StandIn):
    @workflow.run
    async def run(self, params: messages.WorkflowInput) -> Seen:
        return await self.wait_until_gone()


@workflow.defn(name="RayJob")
class RayJobStandIn(_StandIn):
    @workflow.run
    async def run(self, params: messages.WorkflowInput) -> Seen:
        return await self.wait_until_gone()


@workflow.defn(name="RayService")
class RayServiceStandIn(_StandIn):
    @workflow.run
    async def run(self, params: messages.WorkflowInput) -> Seen:
        return await self.wait_until_gone()


STAND_INS = [RayClusterStandIn, RayJobStandIn, RayServiceStandIn]
