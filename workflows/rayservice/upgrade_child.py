"""One RayService upgrade as a child workflow `…/upgrade/<n>` of the RayService's workflow.

KubeRay infers an upgrade's progress from hashes and status on every pass and has no notion
of a failed upgrade (P6). Here an upgrade has explicit phases — create the pending cluster,
wait for its head, apply Serve, wait for N healthy polls, move traffic, promote — each with
a deadline, its own history and UI row. It ends Promoted, RolledBack (a person's `rollback`
or a spec-driven rollback, S15), Superseded (a newer spec before it served, S10) or Aborted
(a deadline passed); the parent owns the status and the deletion of retired clusters.
An incremental upgrade needs the Gateway API: without its CRDs the child says so in its
progress (and so in the status) and waits, as long as a pending head may take, for them.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    import workflows.rayservice.calls as calls
    import workflows.rayservice.incremental as incremental
    from activities.dashboard.contract import ServeStatus
    from activities.rayservice import contract
    from workflows import messages
    from workflows.activity_calls import RAY, execute
    from workflows.rayservice.decisions import serve_apply_reason
    from workflows.rayservice.incremental import MoveKind, Traffic
    from workflows.rayservice.state import (
        ABORT,
        GOAL_CHANGED,
        UPGRADE_PROGRESS,
        AbortRequest,
        GoalChanged,
        Outcome,
        UpgradeInput,
        UpgradeProgress,
        UpgradeResult,
    )

GATEWAY_GATE_PATCH = "rayservice-gateway-gate"
"""Traffic steps wait for the Gateway controller (recorded histories read no route status)."""
WAIT_FAILURE_PATCH = "rayservice-upgrade-wait-failure-is-unhealthy"
"""A wait on Serve that fails every attempt (its worker killed each time, the API server away)
counts as one unhealthy observation; before, it failed the whole upgrade."""
SERVE_EVENT_PATCH = "rayservice-upgrade-records-serve-update"
"""A Serve config PUT to a new cluster records `UpdatedServeApplications`, as KubeRay does."""
POLL = timedelta(seconds=30)
"""Look again this often even without a nudge (the bridge signals the parent, which forwards)."""


class _Stopped(Exception):
    """Ends the upgrade from deep inside a phase (a wait for the Gateway API gave up)."""

    def __init__(self, outcome: Outcome, reason: str) -> None:
        super().__init__(reason)
        self.outcome, self.reason = outcome, reason


def _gateway_api_missing(err: ActivityError) -> str | None:
    """The activity's message when it failed because the Gateway API CRDs are missing."""
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.type == contract.GATEWAY_API_MISSING:
        return cause.message
    return None


@workflow.defn(name="RayServiceUpgrade")
class RayServiceUpgradeWorkflow:
    """Move serving from the active cluster to a new pending one, or give up cleanly."""

    @workflow.init
    def __init__(self, params: UpgradeInput) -> None:
        self._p = params
        self._goal = params.goal_hash
        self._abort: AbortRequest | None = None
        self._nudged = False
        self._healthy = False
        self._no_gateway_api = False
        self._progress = UpgradeProgress(number=params.number, pending=params.pending)

    @workflow.signal(name=messages.OWNED_CHANGED)
    def owned_changed(self, change: messages.OwnedChanged) -> None:
        """The parent forwards the bridge's nudges: a cluster may have become ready."""
        self._nudged = True

    @workflow.signal(name=GOAL_CHANGED)
    def goal_changed(self, change: GoalChanged) -> None:
        """The RayService spec changed during the upgrade."""
        self._goal = change.goal_hash
        self._nudged = True

    @workflow.signal(name=ABORT)
    def abort(self, request: AbortRequest) -> None:
        """Return the traffic to the active cluster and remove the pending one."""
        self._abort = request

    @workflow.query(name=messages.PROGRESS)
    def progress(self) -> UpgradeProgress:
        """The phase, the pending cluster's Serve status and the traffic split."""
        return self._progress

    @workflow.run
    async def run(self, params: UpgradeInput) -> UpgradeResult:
        """Run the phases; a cancellation (the parent closed) still removes the pending cluster."""
        try:
            return await self._upgrade()
        except _Stopped as stop:
            return await self._undo(stop.outcome, stop.reason)
        except asyncio.CancelledError:
            # Activities scheduled after the cancellation was delivered still run.
            await self._undo(Outcome.ROLLED_BACK, "the parent workflow closed")
            raise

    async def _upgrade(self) -> UpgradeResult:
        p = self._p
        if p.incremental and p.active:
            await self._route({p.active: 100, p.pending: 0})
        create = contract.CreateServiceClusterInput(
            ref=p.ref, name=p.pending, goal_hash=p.goal_hash, autoscale_from_min=p.incremental
        )
        created = await execute(
            contract.CREATE_SERVICE_CLUSTER,
            create,
            summary=f"create pending RayCluster {p.pending}",
        )
        if created.stale:
            return await self._undo(
                Outcome.SUPERSEDED, "the spec changed before the cluster was made"
            )
        await self._report("waiting for the pending cluster's head pod")
        ready = await self._wait_head(workflow.now() + p.ready_timeout)
        if ready is not None:
            return ready
        if p.incremental and p.active:
            return await self._incremental(p.active)
        return await self._blue_green()

    # --- phases ---------------------------------------------------------------------------

    async def _wait_head(self, deadline: datetime) -> UpgradeResult | None:
        """None once the pending head is ready, else how the upgrade ended."""
        while True:
            if (stop := await self._interrupted()) is not None:
                return stop
            snap = await execute(
                contract.READ_SERVICE,
                contract.ReadServiceInput(ref=self._p.ref, clusters_only=True),
                summary=f"look at pending RayCluster {self._p.pending}",
            )
            view = snap.cluster(self._p.pending)
            if view is not None and view.head_pod_ready:
                return None
            if workflow.now() >= deadline:
                why = (
                    f"pending RayCluster {self._p.pending} not ready within {self._p.ready_timeout}"
                )
                return await self._undo(Outcome.ABORTED, why)
            await self._pause(min(POLL, deadline - workflow.now()))

    async def _blue_green(self) -> UpgradeResult:
        p = self._p
        if (stop := await self._serve_healthy(None)) is not None:
            return stop
        if p.incremental:
            await self._route({p.pending: 100})  # the very first cluster of an incremental service
        await execute(
            contract.SWITCH_SERVICES,
            contract.SwitchServicesInput(ref=p.ref, cluster=p.pending),
            summary=f"point the RayService's Services at {p.pending}",
        )
        return self._result(Outcome.PROMOTED, "services switched")

    async def _serve_healthy(self, capacity: int | None) -> UpgradeResult | None:
        """Apply Serve where needed and wait for N healthy polls; None once healthy."""
        p = self._p
        deadline = workflow.now() + p.healthy_timeout
        # Until a poll says otherwise, assume an applied config still has its apps.
        apps = 1 if self._progress.applied.get(p.pending) else 0
        while True:
            if (stop := await self._interrupted()) is not None:
                return stop
            if serve_apply_reason(self._progress.applied.get(p.pending), p.serve_config_hash, apps):
                await self._apply(p.pending, capacity)
            try:
                health = await calls.wait_healthy(
                    p.ref, p.pending, p.healthy_observations, deadline - workflow.now()
                )
            except ActivityError:
                if not workflow.patched(WAIT_FAILURE_PATCH):
                    raise
                health = contract.ServeHealth(healthy=False)
            apps = len(health.status.applications)
            self._healthy = health.healthy and health.consecutive_healthy >= p.healthy_observations
            await self._report("waiting for Serve to run on the pending cluster", health.status)
            if self._healthy:
                return None
            if workflow.now() >= deadline:
                why = f"Serve apps on {p.pending} not all RUNNING within {p.healthy_timeout}"
                return await self._undo(Outcome.ABORTED, why)
            await self._pause(timedelta(seconds=5))

    async def _incremental(self, active: str) -> UpgradeResult:
        p, traffic = self._p, Traffic()
        self._progress.traffic = traffic
        await self._apply(p.pending, 0)
        if workflow.patched(GATEWAY_GATE_PATCH):
            # The first route was written before the pending cluster existed; written again,
            # it gets that cluster's `<cluster>-serve-svc`, so its references resolve (a
            # controller reports ResolvedRefs) before the first traffic step is gated on it.
            await self._route({active: 100, p.pending: 0})
        gate_deadline: datetime | None = None
        while True:
            if (stop := await self._interrupted()) is not None:
                return stop
            rolling_back = self._goal != p.goal_hash
            now = workflow.now()
            if rolling_back:
                move = incremental.next_rollback_move(traffic, p.options, now, self._healthy)
            else:
                move = incremental.next_move(traffic, p.options, now)
            if move.kind == MoveKind.DONE:
                await self._route({p.pending: 100})
                await execute(
                    contract.SWITCH_SERVICES,
                    contract.SwitchServicesInput(ref=p.ref, cluster=p.pending),
                    summary=f"point the RayService's Services at {p.pending}",
                )
                return self._result(Outcome.PROMOTED, "all traffic on the new cluster")
            if move.kind == MoveKind.ROLLED_BACK:
                return await self._undo(Outcome.ROLLED_BACK, "DesiredClusterSpecChanged")
            if move.kind == MoveKind.WAIT:
                wait = None if move.until is None else move.until - now
                await self._pause(wait, wake_on_nudge=False)
                continue
            gated = move.kind == MoveKind.WEIGHTS and not rolling_back
            if gated and workflow.patched(GATEWAY_GATE_PATCH):
                gate_deadline = gate_deadline or now + p.ready_timeout
                if await self._gateway_holds(gate_deadline):
                    continue
                gate_deadline = None
            if move.needs_healthy_pending:
                if (stop := await self._serve_healthy(move.traffic.pending_capacity)) is not None:
                    return stop
                move = move.model_copy(
                    update={
                        "traffic": move.traffic.model_copy(update={"migrated_at": workflow.now()})
                    }
                )
            traffic = await self._carry_out(move.kind, move.traffic, active)
            phase = "rolling back" if rolling_back else "moving traffic"
            await self._report(f"{phase}: {traffic.pending_weight}% on {p.pending}")

    async def _carry_out(self, kind: MoveKind, traffic: Traffic, active: str) -> Traffic:
        p = self._p
        if kind == MoveKind.PENDING_CAPACITY:
            await self._apply(p.pending, traffic.pending_capacity)
        elif kind == MoveKind.ACTIVE_CAPACITY:
            await self._apply(active, traffic.active_capacity)
        else:
            await self._route({active: traffic.active_weight, p.pending: traffic.pending_weight})
        self._progress.traffic = traffic
        return traffic

    async def _gateway_holds(self, deadline: datetime) -> bool:
        """True, after a pause, while the Gateway controller holds the next step back (S14).

        Only forward steps wait: a rollback returns traffic to the cluster that served it.
        """
        reported = await execute(
            contract.READ_GATEWAY_STATUS,
            contract.ServiceObjectsInput(ref=self._p.ref),
            summary="read the Gateway's and the HTTPRoute's conditions",
        )
        why = incremental.traffic_gate(reported)
        if why is None:
            self._progress.blocked = ""
            return False
        if workflow.now() >= deadline:
            timeout = self._p.ready_timeout
            raise _Stopped(Outcome.ABORTED, f"the Gateway was not ready within {timeout}: {why}")
        self._progress.blocked = why
        await self._report("waiting for the Gateway controller")
        await self._pause(min(POLL, deadline - workflow.now()))
        return True

    # --- helpers ----------------------------------------------------------------------------

    async def _interrupted(self) -> UpgradeResult | None:
        if self._abort is not None:
            return await self._undo(Outcome.ROLLED_BACK, self._abort.reason)
        if self._goal != self._p.goal_hash and not (self._p.incremental and self._p.active):
            return await self._undo(Outcome.SUPERSEDED, "a newer spec arrived before it served")
        return None

    async def _undo(self, outcome: Outcome, reason: str) -> UpgradeResult:
        """Traffic back to the active cluster, then the pending cluster goes (never served)."""
        p = self._p
        await self._report(f"undoing: {reason}")
        if p.incremental and p.active and not self._no_gateway_api:
            await self._route({p.active: 100, p.pending: 0})
            traffic = self._progress.traffic
            if traffic is not None and traffic.active_capacity < 100:
                with contextlib.suppress(ActivityError):  # best effort: the route already moved
                    await self._apply(p.active, 100)
            self._progress.traffic = Traffic()
        await execute(
            contract.DELETE_SERVICE_CLUSTER,
            contract.ClusterNameInput(ref=p.ref, cluster=p.pending, reason=reason),
            summary=f"delete pending RayCluster {p.pending}: {reason}",
        )
        return self._result(outcome, reason)

    def _result(self, outcome: Outcome, reason: str) -> UpgradeResult:
        return UpgradeResult(
            outcome=outcome,
            pending=self._p.pending,
            reason=reason,
            applied=dict(self._progress.applied),
            traffic=self._progress.traffic,
        )

    async def _apply(self, cluster: str, capacity: int | None) -> None:
        """PUT the spec's Serve config to the pending cluster; to the active one, only capacity.

        The active cluster serves traffic with the config it runs until the upgrade ends, as
        in KubeRay, even when the new spec changed the Serve config too.
        """
        active = cluster == self._p.active
        arg = contract.ApplyServeConfigInput(
            ref=self._p.ref, cluster=cluster, target_capacity=capacity, keep_deployed=active
        )
        summary = f"PUT serveConfigV2 to {cluster}"
        if active:
            summary = f"PUT {cluster}'s running Serve config back"
        if capacity is not None:
            summary += f" (target_capacity {capacity})"
        try:
            result = await execute(contract.APPLY_SERVE_CONFIG, arg, summary=summary, policy=RAY)
        except ActivityError:
            return  # the dashboard is not up yet: the next health poll decides again
        if result.config_hash:
            new_config = self._progress.applied.get(cluster) != result.config_hash
            self._progress.applied[cluster] = result.config_hash
            if new_config and not active and workflow.patched(SERVE_EVENT_PATCH):
                # KubeRay records each config it submits (not a capacity step with it).
                await calls.serve_config_event(self._p.ref, cluster)

    async def _route(self, weights: dict[str, int]) -> None:
        """Write the route's weights; without the Gateway API, wait for it until a deadline."""
        split = ", ".join(f"{name} {weight}%" for name, weight in weights.items())
        deadline: datetime | None = None
        while True:
            try:
                await execute(
                    contract.RECONCILE_GATEWAY,
                    contract.GatewayInput(ref=self._p.ref, weights=weights),
                    summary=f"HTTPRoute weights: {split}",
                )
            except ActivityError as err:
                if (missing := _gateway_api_missing(err)) is None:
                    raise
                deadline = deadline or workflow.now() + self._p.ready_timeout
                await self._wait_for_gateway_api(missing, deadline)
                continue
            if self._no_gateway_api:
                self._progress.blocked, self._no_gateway_api = "", False
                await self._report("the Gateway API is there: moving on")
            return

    async def _wait_for_gateway_api(self, missing: str, deadline: datetime) -> None:
        """Report why the upgrade cannot route traffic, then pause; give up at the deadline."""
        self._progress.blocked, self._no_gateway_api = missing, True
        if self._abort is not None:
            raise _Stopped(Outcome.ROLLED_BACK, self._abort.reason)
        if workflow.now() >= deadline:
            why = f"the Gateway API did not appear within {self._p.ready_timeout}: {missing}"
            raise _Stopped(Outcome.ABORTED, why)
        await self._report("blocked: waiting for the Gateway API CRDs")
        await self._pause(min(POLL, deadline - workflow.now()))

    async def _pause(self, wait: timedelta | None, wake_on_nudge: bool = True) -> None:
        """Wait `wait` (at least a second; None: until something happens) or until woken."""
        self._nudged = False
        goal = self._goal
        timeout = summary = None
        if wait is not None:
            timeout = max(wait, timedelta(seconds=1))
            summary = f"upgrade: next look in {int(timeout.total_seconds())}s"
        with contextlib.suppress(asyncio.TimeoutError):
            await workflow.wait_condition(
                lambda: (
                    self._abort is not None
                    or self._goal != goal
                    or (wake_on_nudge and self._nudged)
                ),
                timeout=timeout,
                timeout_summary=summary,
            )

    async def _report(self, phase: str, serve: ServeStatus | None = None) -> None:
        self._progress.phase = phase
        self._progress.rolling_back = bool(self._p.active) and self._goal != self._p.goal_hash
        if serve is not None:
            self._progress.pending_serve = serve
        workflow.set_current_details(f"upgrade {self._p.number} → {self._p.pending}: {phase}")
        parent = workflow.info().parent
        if parent is not None:
            handle = workflow.get_external_workflow_handle(parent.workflow_id)
            await handle.signal(UPGRADE_PROGRESS, self._progress)
