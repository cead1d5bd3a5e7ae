"""The serving half of a RayService pass: the active cluster, its Serve apps, retired clusters.

A mixin of `RayServiceWorkflow`, split off to keep each module readable: it keeps the serving
cluster as the spec wants it (in-place update, Serve re-apply by KubeRay's rules, Services
pointing at it) and deletes clusters that are neither active nor pending once their durable
deadline passed. The upgrade itself belongs to the child workflow.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    import workflows.rayservice.decisions as rules
    from activities.dashboard.contract import ServeStatus
    from activities.kube.vocabulary import EventType
    from activities.rayservice import contract
    from crds.rayservice import RayServiceStatuses
    from workflows.activity_calls import RAY, execute
    from workflows.rayservice.calls import event, serve_config_event
    from workflows.rayservice.decisions import ClusterMove
    from workflows.rayservice.upgrade_parent import UpgradingMixin
    from workflows.rayservice.views import active_name


class ServingMixin(UpgradingMixin):
    """Serving-cluster and cleanup steps; an upgrade starts through `UpgradingMixin`."""

    async def _serve_active(self, snap: contract.ServiceSnapshot) -> ServeStatus | None:
        """Keep the serving cluster as the spec wants it; start an upgrade when needed."""
        state = self._state
        assert state.spec is not None
        name = active_name(state)
        active = snap.cluster(name)
        if state.upgrade is None:
            kind = rules.upgrade_type(state.spec, snap.zero_downtime)
            move = rules.cluster_move(state.goal_hash, active, kind, state.refused_hash)
            if move in (ClusterMove.CREATE_FIRST, ClusterMove.UPGRADE):
                await self._start_upgrade(active.name if active else None)
            elif move == ClusterMove.UPDATE_IN_PLACE and active is not None:
                update = contract.ClusterNameInput(
                    ref=self._ref, cluster=active.name, reason="worker groups appended"
                )
                await execute(
                    contract.UPDATE_SERVICE_CLUSTER,
                    update,
                    summary=f"update {active.name} in place",
                )
                state.remember(f"updated {active.name} in place")
        if active is None or not active.head_pod_ready:
            return None
        label = contract.HeadServeLabelInput(
            ref=self._ref,
            cluster=active.name,
            exclude_head=bool(state.spec.exclude_head_pod_from_serve_svc),
        )
        await execute(
            contract.SET_HEAD_SERVE_LABEL,
            label,
            summary=f"ray.io/serve label on {active.name}'s head",
        )
        serve = await self._read_serve(active.name)
        if serve is None:
            return None
        apps = len(serve.applications)
        reason = rules.serve_apply_reason(
            state.applied.get(active.name), state.serve_config_hash, apps
        )
        blocked = state.upgrade is not None or state.goal_hash == state.refused_hash
        if reason and state.upgrade is None:
            await self._apply_serve(active.name, reason)
        elif reason and blocked:
            state.remember(f"serve config for {active.name} held back during the upgrade")
        healthy = serve.all_running
        state.streaks = {active.name: rules.next_streak(state.streaks.get(active.name, 0), healthy)}
        if healthy and state.upgrade is None and snap.serve_service_cluster != active.name:
            switch = contract.SwitchServicesInput(ref=self._ref, cluster=active.name)
            await execute(
                contract.SWITCH_SERVICES,
                switch,
                summary=f"point the RayService's Services at {active.name}",
            )
        return serve

    async def _read_serve(self, cluster: str) -> ServeStatus | None:
        try:
            return await execute(
                contract.READ_SERVE_STATUS,
                contract.ReadServeStatusInput(ref=self._ref, cluster=cluster),
                summary=f"read Serve status of {cluster}",
                policy=RAY,
            )
        except ActivityError:
            self._set_waiting([f"the dashboard of {cluster} to answer"])
            return None

    async def _apply_serve(self, cluster: str, reason: str) -> None:
        arg = contract.ApplyServeConfigInput(ref=self._ref, cluster=cluster)
        try:
            done = await execute(
                contract.APPLY_SERVE_CONFIG,
                arg,
                summary=f"PUT serveConfigV2 to {cluster}: {reason}",
                policy=RAY,
            )
        except ActivityError as err:
            cause = err.cause or err
            where = f"{self._ref.namespace}/{cluster}"
            message = f"Failed to update serve applications to the RayCluster {where}: {cause}"
            await event(self._ref, EventType.WARNING, "FailedToUpdateServeApplications", message)
            return
        self._state.applied[cluster] = done.config_hash
        self._state.remember(f"applied serveConfigV2 to {cluster} ({reason})")
        await serve_config_event(self._ref, cluster)

    async def _retire(self, snap: contract.ServiceSnapshot) -> None:
        """Delete clusters that are neither active nor pending once their delay passed (S16)."""
        state = self._state
        assert state.spec is not None
        keep = {active_name(state)} | ({state.upgrade.pending} if state.upgrade else set())
        now = workflow.now()
        plan = rules.schedule_deletions(
            [c.name for c in snap.clusters if not c.deleting],
            keep,
            state.deletions,
            rules.deletion_delay(state.spec),
            now,
        )
        await self._delete_clusters(plan.due, "retired: no longer active or pending")
        state.deletions = {n: at for n, at in plan.scheduled.items() if n not in plan.due}
        deadlines = list(state.deletions.values())
        init = rules.initializing_deadline(
            state.annotations, state.status.conditions if state.status else None
        )
        if init is not None:
            deadlines.append(init)
        state.wake_at = min(deadlines) if deadlines else None

    async def _delete_clusters(self, names: list[str], reason: str) -> None:
        for name in names:
            arg = contract.ClusterNameInput(ref=self._ref, cluster=name, reason=reason)
            await execute(
                contract.DELETE_SERVICE_CLUSTER, arg, summary=f"delete RayCluster {name}: {reason}"
            )
            self._state.remember(f"deleted RayCluster {name} ({reason})")

    def _follow_up(self, active_serve: ServeStatus | None, status: RayServiceStatuses) -> None:
        """Look again soon while the active cluster's apps or endpoints are not there yet."""
        state = self._state
        serving = (
            state.upgrade is not None  # the upgrade child polls and reports on its own
            or not active_name(state)
            or (
                active_serve is not None
                and active_serve.all_running
                and bool(status.num_serve_endpoints)
            )
        )
        now = workflow.now()
        if serving:
            state.not_serving_since = None
            return
        since = state.not_serving_since = state.not_serving_since or now
        delay = rules.follow_up_delay(serving, now - since)
        assert delay is not None
        at = now + delay
        state.wake_at = min(state.wake_at, at) if state.wake_at is not None else at
