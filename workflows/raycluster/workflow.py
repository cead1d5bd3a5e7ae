"""The RayCluster workflow: the Temporal glue around the pure RayCluster decisions.

One workflow per RayCluster, alive as long as the CR. Each pass reads a snapshot, decides
with `decisions.plan_pods`, applies the plan, computes the status with `status.compute_status`
and writes it when it changed. Signals only mark a pass as due; a durable timer re-runs a pass
after `RESYNC` anyway (KubeRay requeues every 300 s), sooner while something is in flight.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.contract import ActivityRef, Written
    from activities.kube.vocabulary import EventType
    from activities.raycluster import contract
    from crds import constants, flags
    from crds.enums import RayClusterConditionType
    from crds.validation import validate
    from crds.violations import reported
    from workflows import messages
    from workflows.activity_calls import execute_where
    from workflows.conditions import is_true
    from workflows.entity import CrWorkflow
    from workflows.names import random_suffix
    from workflows.patches import Patches
    from workflows.raycluster import cleanup, decisions, narration
    from workflows.raycluster.patching import (
        COVERINGS,
        CREATED_PODS_PATCH,
        LOCAL_READ_PATCH,
        LOCAL_WRITES_PATCH,
        REFIT_PATCH,
        SETTLED_RUN_PATCH,
        STEADY_TIMER_PATCH,
        SUSPEND_STEPS_PATCH,
    )
    from workflows.raycluster.plans import PodPlan
    from workflows.raycluster.state import RayClusterInput, RayClusterState
    from workflows.raycluster.status import (
        StatusInputs,
        compute_status,
        status_changed,
        suspend_phase,
        with_created,
    )
    from workflows.resync import ResyncTimer


RESYNC = timedelta(seconds=300)
BUSY_RESYNC = timedelta(seconds=15)
InputT = TypeVar("InputT")
ResultT = TypeVar("ResultT")
_PROVISIONED = RayClusterConditionType.PROVISIONED


@workflow.defn(name="RayCluster")
class RayClusterWorkflow(CrWorkflow[RayClusterState]):
    """Reconcile one RayCluster for as long as it exists."""

    @workflow.init
    def __init__(self, params: RayClusterInput) -> None:
        self._ref = params.ref
        self._state = params.state or RayClusterState()
        self._max_history = params.max_history_events
        self._settled_history = params.settled_history_events
        self._patches = Patches(*COVERINGS, given=params.patches)
        self._resync = ResyncTimer()

    # --- what differs from `CrWorkflow` ---------------------------------------------------------

    def _spec_changed(self, change: messages.SpecChanged) -> None:
        """Older generations are ignored; a resync always counts."""
        self._state.as_of = max(self._state.as_of, change.version)
        if change.resync or change.generation > self._state.generation:
            self._state.wanted_generation = max(self._state.wanted_generation, change.generation)
            self._state.dirty = True

    def _deleted(self, change: messages.Deleted) -> None:
        self._state.as_of = max(self._state.as_of, change.version)

    def _owned_changed(self, change: messages.OwnedChanged) -> None:
        """A pass reads pods at least as new as the newest pod event behind the news.

        News of pods no newer than a pass has read needs no pass: the bridge's watch often runs
        behind the worker's copy, so a pass woken by one change has often read the next too.
        Histories before it recorded no read version (`pods_seen` 0): every news counted there.
        """
        pods = change.versions.get("Pod", 0)
        self._state.pods_as_of = max(self._state.pods_as_of, pods)
        if not (change.kinds == ["Pod"] and 0 < pods <= self._state.pods_seen):
            self._state.dirty = True

    def _waiting_for(self) -> list[str]:
        return list(self._state.waiting)

    # --- main loop ------------------------------------------------------------------------------

    @workflow.run
    async def run(self, params: RayClusterInput) -> str:
        """Reconcile until the CR is gone; returns a one-line epitaph."""
        self._patches.start()
        while True:
            await self._wait_for_work()
            if self._state.gone:
                break
            if self._state.user_suspend is not None:
                await self._write_user_suspend()
            await self._reconcile()
            if self._state.gone:
                break
            if self._should_continue_as_new():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    RayClusterInput(
                        ref=self._ref,
                        state=self._state,
                        patches=self._patches.newest,
                        max_history_events=self._max_history,
                        settled_history_events=self._settled_history,
                    )
                )
        return f"{self._ref} is gone after {self._state.passes} reconcile passes"

    def _settled(self) -> bool:
        state = self._state
        idle = not (state.waiting or state.expectations or state.failed_passes)
        idle = idle and state.user_suspend is None and state.wake_at is None
        return idle and self._patches.on(SETTLED_RUN_PATCH)  # marker last: only when taken

    async def _wait_for_work(self) -> None:
        timeout = BUSY_RESYNC if self._state.waiting else RESYNC
        if self._state.wake_at is not None:
            # A deadline (the finalizer's timeout) is due before the resync.
            timeout = max(min(timeout, self._state.wake_at - workflow.now()), timedelta(seconds=1))
        if self._state.failed_passes:
            timeout = min(timeout, decisions.retry_delay(self._state.failed_passes))
        summary = "waiting for a change" if not self._state.waiting else "waiting for pods"
        summary += f" (resync after {int(timeout.total_seconds())}s)"
        if self._patches.on(STEADY_TIMER_PATCH):
            if not (self._state.dirty or self._state.gone):  # else no wait: no timer either
                await self._resync.wait(
                    workflow.now() + timeout,
                    summary,
                    lambda: self._state.dirty or self._state.gone,
                    refit=self._patches.on(REFIT_PATCH),
                )
        else:
            with contextlib.suppress(TimeoutError):  # a resync: the pass is due anyway
                await workflow.wait_condition(
                    lambda: self._state.dirty or self._state.gone,
                    timeout=timeout,
                    timeout_summary=summary,
                )
        self._state.dirty = False

    # --- one pass -------------------------------------------------------------------------------

    async def _reconcile(self) -> None:
        state = self._state
        state.passes += 1
        known = state.generation if state.spec is not None else None
        read = contract.ReadClusterInput(
            ref=self._ref, known_generation=known, pods_as_of=state.pods_as_of, as_of=state.as_of
        )
        summary = "read the RayCluster, its pods and Services"
        local = self._patches.on(LOCAL_READ_PATCH)  # histories before it read as an activity
        snap = await execute_where(local, contract.READ_CLUSTER, read, summary=summary)
        if not snap.exists:
            state.gone = True
            return
        self._absorb(snap)
        state.pods_seen = max(state.pods_seen, snap.pods_seen)
        if snap.deleting:
            await self._finalize(snap)
            return
        if not await self._valid(snap.schema_violations, snap.gate_violations):
            return
        await self._finalize(snap)
        if state.spec is not None and state.spec.managed_by == constants.MANAGED_BY_MULTIKUEUE:
            # The bridge leaves such CRs alone; this guards a spec edited after the start.
            self._set_waiting([f"nothing: managed by {constants.MANAGED_BY_MULTIKUEUE}"])
            return
        await self._act(snap)

    async def _finalize(self, snap: contract.ClusterSnapshot) -> None:
        """The Redis cleanup finalizer: add it, or run the deletion steps (`cleanup`)."""
        state = self._state
        if state.spec is None:
            return
        facts = cleanup.facts_of(state.spec, state.annotations, snap)
        decision = cleanup.cleanup_step(facts, workflow.now())
        state.wake_at = decision.deadline
        if decision.step != cleanup.CleanupStep.NONE:
            step = contract.CleanupStepInput(
                ref=self._ref, step=decision.step, reason=decision.reason
            )
            summary = f"{decision.step}: {decision.reason}"
            written: Written | None = await self._kube(contract.CLEANUP_CLUSTER, step, summary)
            self._wrote(written)
            state.remember(f"finalizer: {summary}")
        if snap.deleting:
            reason = decision.reason or "Kubernetes to collect the pods"
            self._set_waiting([f"deletion: {reason}"])

    def _absorb(self, snap: contract.ClusterSnapshot) -> None:
        state = self._state
        if snap.spec is not None:
            state.spec = snap.spec
            state.generation = snap.generation
        if snap.status is not None and state.status is None:
            state.status = snap.status
        state.annotations = snap.annotations
        state.labels = snap.labels

    async def _valid(self, schema_violations: list[str], gate_violations: list[str]) -> bool:
        if schema_violations or self._state.spec is None:
            violations = schema_violations or ["spec: the RayCluster has no readable spec"]
        else:
            found = reported(validate(self._state.as_cluster(self._ref)))
            violations = gate_violations + found
        if violations and violations != self._state.reported_violations:
            message = "invalid spec: " + "; ".join(violations)
            self._state.remember(message)
            await self._event(EventType.WARNING, narration.invalid_reason(violations), message)
        self._state.reported_violations = violations
        if violations:
            reason = narration.invalid_reason(violations)
            self._set_waiting([f"a valid RayCluster (see the {reason} Event)"])
        return not violations

    async def _act(self, snap: contract.ClusterSnapshot) -> None:
        state, spec = self._state, self._state.spec
        assert spec is not None
        now = workflow.now()
        previous = state.status
        suspend, pod_count = bool(spec.suspend), len(snap.pods)
        phase = decisions.next_suspend_phase(suspend_phase(previous), suspend, pod_count)
        if (
            decisions.next_suspend_phase(phase, suspend, pod_count) != phase
            and self._patches.on(SUSPEND_STEPS_PATCH)  # marker last: only when taken
        ):
            # Nothing will signal it (no pod is left to change); KubeRay's reconcile requeues.
            state.dirty = True
        facts = decisions.ClusterFacts(
            spec=spec,
            spec_hash=snap.spec_hash,
            head_prefix=snap.head_prefix,
            head_name=snap.head_name,
            worker_prefixes=snap.worker_prefixes,
            suspend_phase=phase,
            provisioned=is_true(previous.conditions if previous else None, _PROVISIONED),
            skip_head_restart=state.annotations.get(
                constants.ANNOTATION_DISABLE_PROVISIONED_HEAD_RESTART
            )
            == flags.TRUE,
        )
        state.expectations = decisions.prune_expectations(state.expectations, snap.pods, now)
        plan = decisions.plan_pods(facts, snap.pods, state.expectations, now, self._new_name)
        result = await self._apply(plan, snap)
        if result.stale:
            return  # the spec changed under us; the next pass re-reads it
        if plan.unfinished and not result.failure:
            # The rest of a plan larger than a pass: no event would announce that it is due.
            state.dirty = True
        pods = snap.pods
        # As KubeRay's next reconcile, which their creation wakes at once, counts them.
        counted = bool(result.created) and self._patches.on(CREATED_PODS_PATCH)
        if counted:
            pods = with_created(pods, result.created_pods)
            state.pods_as_of = max(state.pods_as_of, result.pods_version)
        status = compute_status(
            StatusInputs(
                spec=spec,
                generation=state.generation,
                previous=previous,
                pods=pods,
                # One the pass created counts at once (none in histories before the field).
                head_service=snap.head_service or result.head_service,
                suspend_phase=phase,
                resources=snap.resources,
                failure=result.failure,
            ),
            now,
        )
        if status_changed(previous, status):
            written: Written | None = await self._kube(
                contract.WRITE_CLUSTER_STATUS,
                contract.WriteStatusInput(
                    ref=self._ref, status=status, read_version=snap.resource_version
                ),
                summary="write the RayCluster status",
            )
            self._wrote(written)
        state.status = status
        waiting = narration.waiting_for(plan, phase, creations_seen=counted)
        if result.created and not waiting and not counted:
            # Runs before `CREATED_PODS_PATCH`: the bridge does not signal a pod's creation,
            # and a pod no scheduler takes never changes, so they looked again soon for its
            # name to reach the status (KubeRay's pod watch writes it at once).
            waiting.append(f"{len(result.created)} created pod(s) to be seen")
        state.failed_passes = state.failed_passes + 1 if result.failure else 0
        if result.failure:
            delay = decisions.retry_delay(state.failed_passes)
            waiting.append(f"a retry in {delay.total_seconds():.0f}s ({result.failure.reason})")
        self._set_waiting(waiting)
        self._publish_state()

    async def _apply(
        self, plan: PodPlan, snap: contract.ClusterSnapshot
    ) -> contract.ApplyClusterResult:
        """Run the plan (when there is anything to do) and remember what it did."""
        missing_objects = bool(snap.missing_objects)
        if plan.empty and not missing_objects:
            return contract.ApplyClusterResult()
        result = await self._kube(
            contract.APPLY_CLUSTER,
            contract.ApplyClusterInput(
                ref=self._ref,
                generation=self._state.generation,
                read_version=snap.resource_version,
                ensure_objects=missing_objects,
                delete_all_reason=plan.delete_all_reason,
                deletions=plan.deletions,
                creations=plan.creations,
            ),
            summary=narration.describe_plan(plan),
        )
        if result.stale:
            self._state.dirty = True
            return result
        if plan.delete_all_reason:
            self._state.expectations = {}  # every pod goes; nothing earlier is still awaited
        now = workflow.now()
        self._state.expectations.update(
            decisions.expectations_after(plan, result.created, result.deleted, now)
        )
        for line in narration.decision_lines(plan, result):
            self._state.remember(line)
        return result

    async def _write_user_suspend(self) -> None:
        wanted = self._state.user_suspend
        self._state.user_suspend = None
        assert wanted is not None
        verb = "suspend" if wanted else "resume"
        written: Written | None = await self._kube(
            contract.SET_CLUSTER_SUSPEND,
            contract.SetSuspendInput(ref=self._ref, suspend=wanted),
            summary=f"write spec.suspend={str(wanted).lower()} ({verb} signal)",
        )
        self._wrote(written)
        self._state.remember(f"{verb} requested by signal: spec.suspend set to {wanted}")

    # --- helpers --------------------------------------------------------------------------------

    async def _kube(self, ref: ActivityRef[InputT, ResultT], arg: InputT, summary: str) -> ResultT:
        """A write of the pass: local, unless the run began before the patch (its history)."""
        local = self._patches.on(LOCAL_WRITES_PATCH)
        return await execute_where(local, ref, arg, summary=summary)

    async def _event(self, kind: EventType, reason: str, message: str) -> None:
        event = contract.EventSpec(type=kind, reason=reason, message=message)
        await self._kube(
            contract.RECORD_EVENT,
            contract.RecordEventInput(ref=self._ref, event=event),
            summary=f"record Event {reason}",
        )

    def _wrote(self, written: Written | None) -> None:
        """A write's version: the next read waits for the copy to reach it.

        None: the write ran before writes returned one (its history replays).
        """
        if written is not None:
            self._state.as_of = max(self._state.as_of, written.version)

    def _new_name(self, prefix: str) -> str:
        return prefix + random_suffix(workflow.random())

    def _set_waiting(self, waiting: list[str]) -> None:
        self._state.waiting = waiting
        workflow.set_current_details(self._summary())

    def _headline(self) -> str:
        status = self._state.status
        if status is None or not status.state:
            return messages.FIRST_HEADLINE["RayCluster"]
        return status.state

    def _summary(self) -> str:
        return narration.summary(self._ref, self._headline(), self._state)
