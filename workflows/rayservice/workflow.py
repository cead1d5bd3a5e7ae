"""The RayService workflow: the Temporal glue around the pure RayService decisions.

One workflow per RayService, alive as long as the CR. A pass reads a snapshot, validates,
runs the suspend steps, decides what the serving cluster needs (`decisions.cluster_move`),
keeps Serve applied to it, deletes retired clusters on their durable deadlines, and writes
the status. A new cluster — the first one or an upgrade — is the job of a child workflow
(`upgrade_child.py`); while it runs the parent forwards nudges and spec changes to it, keeps the
status current from its reports, and never continues-as-new. The parent's side of upgrades
lives in `upgrade_parent.py`, the serving cluster and cleanup in `serving.py`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import timedelta

from temporalio import workflow
from temporalio.workflow import ChildWorkflowHandle

with workflow.unsafe.imports_passed_through():
    import workflows.rayservice.decisions as rules
    import workflows.rayservice.status as st
    from activities.dashboard.contract import ServeStatus
    from activities.kube.vocabulary import EventType
    from activities.rayservice import contract
    from crds import constants
    from crds.rayservice import RayService, RayServiceStatuses
    from crds.validation import validate
    from crds.violations import reported
    from workflows import messages, user_signals
    from workflows.activity_calls import execute
    from workflows.entity import CrWorkflow
    from workflows.rayservice.calls import event
    from workflows.rayservice.decisions import SuspendStep
    from workflows.rayservice.serving import ServingMixin
    from workflows.rayservice.state import (
        UPGRADE_PROGRESS,
        RayServiceInput,
        RayServiceState,
        UpgradeProgress,
        UpgradeResult,
    )
    from workflows.rayservice.upgrade_child import RayServiceUpgradeWorkflow
    from workflows.rayservice.views import active_name, details, status_inputs

RESYNC = timedelta(seconds=300)
FOLLOW_UP_PATCH = "rayservice-follow-up"
"""Passes that look again at a cluster not serving yet (recorded histories lack them)."""
SUSPEND_PROGRESS_PATCH = "rayservice-suspend-in-progress"
"""Suspending=True/SuspendInProgress while owned objects go (recorded histories lack it)."""
UNREADABLE_PATCH = "rayservice-unreadable-validation-failed"
"""A RayService unreadable from its first read is refused, not asserted on (histories crashed)."""


@workflow.defn(name="RayService")
class RayServiceWorkflow(CrWorkflow[RayServiceState], ServingMixin):
    """Serve one RayService for as long as it exists."""

    @workflow.init
    def __init__(self, params: RayServiceInput) -> None:
        self._p = params
        self._ref = params.ref
        self._state = params.state or RayServiceState()
        self._child: ChildWorkflowHandle[RayServiceUpgradeWorkflow, UpgradeResult] | None = None
        self._nudge_child = False

    # --- what differs from `CrWorkflow` ---------------------------------------------------------

    def _owned_changed(self, change: messages.OwnedChanged) -> None:
        """A RayCluster, Service or route changed: the upgrade child hears of it too."""
        self._state.dirty = self._nudge_child = True

    @workflow.signal(name=messages.ROLLBACK)
    async def rollback(self, *inputs: object) -> None:
        """A person asks to stop the running upgrade and keep the active cluster."""
        request = await user_signals.accepted(self._ref, messages.ROLLBACK, inputs)
        if request is not None:
            self._state.rollback_request = request.reason or "rollback signal"
            self._state.dirty = True

    @workflow.signal(name=UPGRADE_PROGRESS)
    def upgrade_progress(self, progress: UpgradeProgress) -> None:
        """The upgrade child moved on; the status follows."""
        upgrade = self._state.upgrade
        if upgrade is not None and upgrade.number == progress.number:
            upgrade.progress = progress
            self._state.dirty = True

    def _summary(self) -> str:
        return details(self._ref, self._headline(), self._state)

    def _waiting_for(self) -> list[str]:
        return list(self._state.waiting)

    # --- main loop ------------------------------------------------------------------------------

    @workflow.run
    async def run(self, params: RayServiceInput) -> str:
        """Reconcile until the CR is gone; returns a one-line epitaph."""
        while True:
            await self._wait_for_work()
            if self._child is not None and self._child.done():
                await self._finish_upgrade()
            if self._state.gone and self._child is None:
                break
            if self._state.user_suspend is not None:
                await self._write_user_suspend()
            await self._pass()
            if self._state.gone and self._child is None:
                break
            if self._should_continue_as_new():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    RayServiceInput(
                        ref=self._ref,
                        state=self._state,
                        max_history_events=self._p.max_history_events,
                        ready_timeout=self._p.ready_timeout,
                        healthy_timeout=self._p.healthy_timeout,
                    )
                )
        return f"{self._ref} is gone after {self._state.passes} reconcile passes"

    async def _wait_for_work(self) -> None:
        timeout = RESYNC
        if self._state.wake_at is not None:
            timeout = min(timeout, self._state.wake_at - workflow.now())
        timeout = max(timeout, timedelta(seconds=1))
        with contextlib.suppress(TimeoutError):  # a deadline or a resync: the pass is due anyway
            await workflow.wait_condition(
                lambda: (
                    self._state.dirty
                    or self._state.gone
                    or (self._child is not None and self._child.done())
                ),
                timeout=timeout,
                timeout_summary=f"waiting for a change (look again in {timeout})",
            )
        self._state.dirty = False

    def _should_continue_as_new(self) -> bool:
        if self._child is not None or self._state.dirty:
            return False  # an upgrade child would be cancelled by the parent-close policy
        info = workflow.info()
        limit = self._p.max_history_events
        too_long = limit is not None and info.get_current_history_length() >= limit
        return too_long or info.is_continue_as_new_suggested()

    # --- one pass -------------------------------------------------------------------------------

    async def _pass(self) -> None:
        state = self._state
        state.passes += 1
        known = state.generation if state.spec is not None else None
        snap = await execute(
            contract.READ_SERVICE,
            contract.ReadServiceInput(ref=self._ref, known_generation=known),
            summary="read the RayService, its clusters, Services and routes",
        )
        if not snap.exists:
            state.gone = True
            return
        self._absorb(snap)
        if snap.deleting:
            await self._delete_everything(snap)
            return
        if constants.FINALIZER_RAYSERVICE not in snap.finalizers:
            finalizer = contract.SetFinalizerInput(ref=self._ref, present=True)
            await execute(
                contract.SET_SERVICE_FINALIZER, finalizer, summary="add the RayService finalizer"
            )
        if state.spec is None and workflow.patched(UNREADABLE_PATCH):
            # Never readable (a looser CRD let it in): refuse it, naming the fields.
            await self._valid(
                snap.schema_violations or ["spec: the RayService has no readable spec"]
            )
            return
        assert state.spec is not None
        if state.spec.managed_by == constants.MANAGED_BY_MULTIKUEUE:
            self._set_waiting([f"nothing: managed by {constants.MANAGED_BY_MULTIKUEUE}"])
            return
        if not await self._valid(snap.schema_violations, snap.gate_violations):
            return
        if await self._suspension(snap):
            return
        await self._forward_to_upgrade()
        active_serve = None
        if not rules.timed_out(state.status.conditions if state.status else None):
            active_serve = await self._serve_active(snap)
        await self._retire(snap)
        await self._write_status(snap, active_serve)

    def _absorb(self, snap: contract.ServiceSnapshot) -> None:
        state = self._state
        if snap.spec is not None:
            state.spec, state.generation = snap.spec, snap.generation
        if snap.status is not None and state.status is None:
            state.status = snap.status
        state.annotations, state.labels = snap.annotations, snap.labels
        if snap.goal_hash != state.goal_hash and snap.goal_hash != state.refused_hash:
            state.refused = None
        state.goal_hash, state.serve_config_hash = snap.goal_hash, snap.serve_config_hash
        rolled_back = snap.annotations.get(constants.ANNOTATION_ROLLBACK_REQUESTED)
        if rolled_back and state.refused_hash is None:
            # A rollback written to the CR before this run's memory began.
            state.refused_hash = rolled_back
            state.refused = (st.ROLLED_BACK, "rolled back by request")

    async def _valid(
        self, schema_violations: list[str], gate_violations: Sequence[str] = ()
    ) -> bool:
        state = self._state
        found = schema_violations or [*gate_violations, *self._rule_violations()]
        if found and found != state.reported_violations:
            message = "; ".join(found)
            state.remember(f"invalid spec: {message}")
            await event(self._ref, EventType.WARNING, "InvalidRayServiceSpec", message)
            failed = st.validation_failed(state.status, message, workflow.now())
            await self._write(failed)
        state.reported_violations = found
        if found:
            self._set_waiting(["a valid spec (see the InvalidRayServiceSpec Event)"])
        return not found

    def _rule_violations(self) -> list[str]:
        state = self._state
        assert state.spec is not None
        meta = self._ref.meta(state.generation, state.labels, state.annotations)
        return reported(validate(RayService(metadata=meta, spec=state.spec)))

    async def _suspension(self, snap: contract.ServiceSnapshot) -> bool:
        """KubeRay's atomic suspend (S19); True while it keeps the rest of the pass away."""
        state = self._state
        assert state.spec is not None
        conds = state.status.conditions if state.status else None
        leftovers = [c.name for c in snap.clusters] + snap.owned_objects
        step = rules.suspend_step(
            rules.suspend_phase(conds), bool(state.spec.suspend), len(leftovers)
        )
        now = workflow.now()
        if step == SuspendStep.NONE:
            return False
        if step == SuspendStep.BEGIN:
            if await self._abort_upgrade("the RayService is being suspended", None):
                return True
            await self._write(st.suspend_begun(state.status, state.generation, now))
            state.dirty = True
        elif step == SuspendStep.DELETE:
            await self._delete_clusters(
                [c.name for c in snap.clusters if not c.deleting], "suspend"
            )
            await execute(
                contract.DELETE_SERVICE_OBJECTS,
                contract.ServiceObjectsInput(ref=self._ref),
                summary="delete Services and routes",
            )
            if workflow.patched(SUSPEND_PROGRESS_PATCH):
                assert state.status is not None
                await self._write(st.suspend_deleting(state.status, now))
            self._set_waiting(["owned RayClusters, Services and routes to go (suspending)"])
        elif step == SuspendStep.COMPLETE:
            assert state.status is not None
            state.applied, state.streaks, state.deletions, state.traffic = {}, {}, {}, None
            await self._write(st.suspend_completed(state.status, now))
            self._set_waiting([])
        elif step == SuspendStep.RESUME:
            assert state.status is not None
            await self._write(st.resumed(state.status, state.generation, now))
            state.dirty = True
            return True
        self._publish_state()
        return True

    # --- cleanup --------------------------------------------------------------------------------

    async def _delete_everything(self, snap: contract.ServiceSnapshot) -> None:
        """The CR is being deleted: clusters go at once, then the finalizer (S3)."""
        if await self._abort_upgrade("the RayService is being deleted", None):
            return
        alive = [c.name for c in snap.clusters if not c.deleting]
        await self._delete_clusters(alive, "the RayService is being deleted")
        if snap.clusters:
            self._set_waiting([f"{len(snap.clusters)} RayCluster(s) to go before the finalizer"])
            return
        if constants.FINALIZER_RAYSERVICE in snap.finalizers:
            finalizer = contract.SetFinalizerInput(ref=self._ref, present=False)
            await execute(
                contract.SET_SERVICE_FINALIZER, finalizer, summary="remove the RayService finalizer"
            )
            self._state.dirty = True

    # --- status ---------------------------------------------------------------------------------

    async def _write_status(
        self, snap: contract.ServiceSnapshot, active_serve: ServeStatus | None
    ) -> None:
        state = self._state
        assert state.spec is not None
        now = workflow.now()
        inputs = status_inputs(
            state, snap, self._ref, active_serve, rules.is_incremental(state.spec)
        )
        status = st.compute_status(inputs, now)
        deadline = rules.initializing_deadline(state.annotations, status.conditions)
        if deadline is not None and now >= deadline:
            timeout = rules.initializing_timeout(state.annotations)
            message = (
                f"RayService failed to become ready within the configured timeout of {timeout}"
            )
            await self._abort_upgrade("initializing timeout", None)
            status = st.initializing_timed_out(status, message, now)
            await event(self._ref, EventType.WARNING, "RayServiceInitializingTimeout", message)
            state.dirty = True  # the next pass retires the clusters
        await self._write(status)
        if workflow.patched(FOLLOW_UP_PATCH):
            self._follow_up(active_serve, status)
        self._set_waiting(self._waiting(snap))

    async def _write(self, status: RayServiceStatuses) -> None:
        if st.status_changed(self._state.status, status):
            arg = contract.WriteServiceStatusInput(ref=self._ref, status=status)
            await execute(contract.WRITE_SERVICE_STATUS, arg, summary="write the RayService status")
        self._state.status = status
        self._publish_state()

    def _waiting(self, snap: contract.ServiceSnapshot) -> list[str]:
        state = self._state
        if state.upgrade is not None:
            return [f"upgrade {state.upgrade.number}: {state.upgrade.progress.phase}"]
        waiting = [f"deletion of {n} at {at:%H:%M:%S}" for n, at in sorted(state.deletions.items())]
        if not active_name(state):
            waiting.insert(0, "a serving cluster")
        return waiting

    async def _write_user_suspend(self) -> None:
        wanted, self._state.user_suspend = self._state.user_suspend, None
        assert wanted is not None
        arg = contract.SetServiceSuspendInput(ref=self._ref, suspend=wanted)
        await execute(
            contract.SET_SERVICE_SUSPEND, arg, summary=f"write spec.suspend={str(wanted).lower()}"
        )
        self._state.remember(f"spec.suspend set to {wanted} by signal")

    def _set_waiting(self, waiting: list[str]) -> None:
        self._state.waiting = waiting
        workflow.set_current_details(details(self._ref, self._headline(), self._state))

    def _headline(self) -> str:
        return st.headline(
            self._state.status, self._state.upgrade is not None and bool(active_name(self._state))
        )
