"""The RayService workflow's side of its upgrades: start, forward, abort, finish, promote.

A mixin of `RayServiceWorkflow`, split off to keep each module readable. The upgrade itself
runs as a child workflow (`upgrade_child.py`); the parent starts it, forwards spec changes, nudges
and a person's rollback to it, asks it to give up (suspend, deletion, the initializing
timeout), and takes over what it reports when it ends.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError
from temporalio.workflow import ChildWorkflowHandle, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    import workflows.rayservice.decisions as rules
    import workflows.rayservice.status as st
    from activities.kube.vocabulary import EventType
    from activities.rayservice import contract
    from crds.rayservice import RayServiceStatus, RayServiceStatuses
    from crds.refs import ObjectRef
    from workflows import messages
    from workflows.activity_calls import execute
    from workflows.names import random_suffix
    from workflows.rayservice.calls import event
    from workflows.rayservice.incremental import Traffic, options_of
    from workflows.rayservice.state import (
        ABORT,
        GOAL_CHANGED,
        AbortRequest,
        GoalChanged,
        Outcome,
        RayServiceInput,
        RayServiceState,
        UpgradeInput,
        UpgradeRecord,
        UpgradeResult,
    )
    from workflows.rayservice.upgrade_child import RayServiceUpgradeWorkflow

_CHILD_GONE = "ExternalWorkflowExecutionNotFound"


class UpgradingMixin:
    """Upgrade-child bookkeeping, sharing the workflow's `_ref`, `_state`, `_p` and child."""

    _p: RayServiceInput
    _ref: ObjectRef
    _state: RayServiceState
    _child: ChildWorkflowHandle[RayServiceUpgradeWorkflow, UpgradeResult] | None
    _nudge_child: bool

    def _set_waiting(self, waiting: list[str]) -> None:
        raise NotImplementedError

    async def _forward_to_upgrade(self) -> None:
        """Tell the running upgrade what changed; carry out a person's rollback."""
        state, upgrade = self._state, self._state.upgrade
        if state.rollback_request is not None:
            reason, state.rollback_request = state.rollback_request, None
            if upgrade is None:
                state.remember(f"rollback ignored: no upgrade in progress ({reason})")
                await event(
                    self._ref, EventType.NORMAL, "RollbackIgnored", "No upgrade in progress"
                )
                return
            record = contract.RollbackAnnotationInput(
                ref=self._ref, goal_hash=upgrade.goal_hash, reason=reason, at=workflow.now()
            )
            await execute(
                contract.RECORD_ROLLBACK,
                record,
                summary="write the ray.io/rollback-requested annotation",
            )
            message = f"Rolling back upgrade {upgrade.number} ({upgrade.pending}): {reason}"
            await event(self._ref, EventType.NORMAL, "RollbackRequested", message)
            state.refused_hash = upgrade.goal_hash
            state.refused = (st.ROLLED_BACK, f"upgrade rolled back by request: {reason}")
            await self._abort_upgrade(reason, st.ROLLBACK_REQUESTED)
            return
        if upgrade is None or self._child is None:
            return
        if state.goal_hash != upgrade.forwarded_goal:
            upgrade.forwarded_goal = state.goal_hash
            await self._signal_child(GOAL_CHANGED, GoalChanged(goal_hash=state.goal_hash))
        if self._nudge_child:
            self._nudge_child = False
            await self._signal_child(messages.OWNED_CHANGED, messages.OwnedChanged())

    async def _signal_child(self, name: str, arg: object) -> None:
        """Signal the running upgrade; one that has just ended is no error.

        The child can end between the parent's turns (found by the fault suite, where slow
        activities widen the window): its result is then already on its way to `run`, which
        takes it over next. Catching the failure, rather than not sending, keeps the commands
        of recorded histories.
        """
        assert self._child is not None
        try:
            await self._child.signal(name, arg)
        except ApplicationError as err:
            if err.type != _CHILD_GONE:
                raise

    async def _start_upgrade(self, active: str | None) -> None:
        state = self._state
        assert state.spec is not None
        state.upgrades += 1
        pending = f"{self._ref.name}-{random_suffix(workflow.random())}"
        params = UpgradeInput(
            ref=self._ref,
            number=state.upgrades,
            incremental=rules.is_incremental(state.spec),
            active=active,
            pending=pending,
            goal_hash=state.goal_hash,
            serve_config_hash=state.serve_config_hash,
            options=options_of(state.spec),
            ready_timeout=self._p.ready_timeout,
            healthy_timeout=self._p.healthy_timeout,
            healthy_observations=rules.HEALTHY_OBSERVATIONS,
            deletion_delay=rules.deletion_delay(state.spec),
        )
        child_id = f"{self._ref.workflow_id}/upgrade/{state.upgrades}"
        self._child = await workflow.start_child_workflow(
            RayServiceUpgradeWorkflow.run,
            params,
            id=child_id,
            parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
            static_summary=f"{self._ref}: upgrade {state.upgrades} to {pending}",
        )
        state.upgrade = UpgradeRecord(
            number=state.upgrades,
            child_id=child_id,
            pending=pending,
            goal_hash=state.goal_hash,
            forwarded_goal=state.goal_hash,
        )
        verb = "first cluster" if active is None else f"upgrade {state.upgrades} from {active}"
        state.remember(f"{verb}: pending cluster {pending}")

    async def _abort_upgrade(self, reason: str, rollback_reason: str | None) -> bool:
        """Ask the running upgrade to give up; True if there is one to wait for."""
        upgrade = self._state.upgrade
        if upgrade is None or self._child is None:
            return False
        if upgrade.aborting is None:
            upgrade.aborting = rollback_reason or reason
            await self._signal_child(ABORT, AbortRequest(reason=reason))
        self._set_waiting([f"upgrade {upgrade.number} to remove {upgrade.pending}"])
        return True

    async def _finish_upgrade(self) -> None:
        state, child = self._state, self._child
        upgrade = state.upgrade
        assert child is not None and upgrade is not None
        self._child, state.upgrade, state.dirty = None, None, True
        try:
            result = child.result()
        except ChildWorkflowError as err:  # a bug or a termination: decide afresh
            state.remember(f"upgrade {upgrade.number} failed: {err.cause or err}")
            return
        state.applied.update(result.applied)
        state.remember(f"upgrade {upgrade.number}: {result.outcome} ({result.reason})")
        if result.outcome == Outcome.PROMOTED:
            await self._promote(upgrade, result)
        elif result.outcome == Outcome.ABORTED:
            state.refused_hash = upgrade.goal_hash
            state.refused = (st.UPGRADE_ABORTED, result.reason)
            await event(self._ref, EventType.WARNING, st.UPGRADE_ABORTED, result.reason)

    async def _promote(self, upgrade: UpgradeRecord, result: UpgradeResult) -> None:
        state = self._state
        status = state.status.model_copy(deep=True) if state.status else RayServiceStatuses()
        status.active_service_status = RayServiceStatus(ray_cluster_name=result.pending)
        status.pending_service_status = st.empty_side()
        state.status = status
        state.traffic = Traffic() if result.traffic is not None else None
        state.streaks = {}
        message = f"Promoted the RayCluster {result.pending} to active"
        await event(self._ref, EventType.NORMAL, "PromotedRayCluster", message)
