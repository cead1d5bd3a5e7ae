"""The RayCronJob workflow: keeps the RayCronJob's Temporal Schedule in step with the CR.

One workflow per RayCronJob, alive as long as the CR. A pass reads the CR (never its job
template), decides with `decisions.plan_pass` and writes the Schedule when what it should say
changed: created on the first pass, updated on an edit, paused while suspended or invalid,
deleted with the CR. It waits on signals alone — the Schedule keeps the times, so the history
grows with edits, not with firings.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.kube.vocabulary import EventType
    from activities.raycronjob import contract
    from crds import constants
    from workflows import messages
    from workflows.activity_calls import execute
    from workflows.entity import CrWorkflow
    from workflows.raycronjob import decisions
    from workflows.raycronjob.state import RayCronJobInput, RayCronJobState, Synced


@workflow.defn(name="RayCronJob")
class RayCronJobWorkflow(CrWorkflow[RayCronJobState]):
    """Keep one RayCronJob's Schedule for as long as the RayCronJob exists."""

    @workflow.init
    def __init__(self, params: RayCronJobInput) -> None:
        self._ref = params.ref
        self._state = params.state or RayCronJobState()

    def _spec_changed(self, change: messages.SpecChanged) -> None:
        """A new generation or a changed annotation: read again; a resync rewrites the Schedule."""
        self._state.dirty = True
        self._state.resync = self._state.resync or change.resync

    def _headline(self) -> str:
        return self._state.headline or messages.FIRST_HEADLINE["RayCronJob"]

    def _summary(self) -> str:
        lines = [f"**{self._ref}**: {self._headline()}"]
        if self._state.last_schedule:
            lines.append(f"last RayJob scheduled for {self._state.last_schedule}")
        return "\n\n".join(lines)

    def _waiting_for(self) -> list[str]:
        if self._state.headline == decisions.SCHEDULED:
            return ["the Schedule's next firing"]
        return ["a change of the RayCronJob"]

    @workflow.run
    async def run(self, params: RayCronJobInput) -> str:
        """Keep the Schedule until the RayCronJob goes; returns a one-line epitaph."""
        while True:
            await workflow.wait_condition(lambda: self._state.dirty or self._state.gone)
            self._state.dirty = False
            if not self._state.gone:
                if self._state.user_suspend is not None:
                    await self._write_user_suspend()
                await self._reconcile()
            if self._state.gone:
                await self._delete_schedule()
                break
            if workflow.info().is_continue_as_new_suggested() and not self._state.dirty:
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(RayCronJobInput(ref=self._ref, state=self._state))
        return f"{self._ref} is gone after {self._state.passes} passes; its Schedule too"

    async def _reconcile(self) -> None:
        state = self._state
        state.passes += 1
        snap = await execute(
            contract.READ_RAYCRONJOB,
            contract.ReadCronJobInput(ref=self._ref),
            summary="read the RayCronJob",
        )
        if not snap.exists or snap.deleting:
            state.gone = True
            return
        state.generation = snap.generation
        if snap.last_schedule_time is not None:
            state.last_schedule = snap.last_schedule_time.isoformat()
        step = decisions.plan_pass(self._ref, snap, state)
        if step.invalid_message is not None:
            state.reported_generation = snap.generation
            await self._event(
                EventType.WARNING, constants.EVENT_INVALID_RAYCRONJOB_SPEC, step.invalid_message
            )
        if step.sync is not None and not await self._sync(step.sync, step.synced, snap):
            return
        if step.suspended_event:
            await self._event(
                EventType.NORMAL, constants.EVENT_SUSPENDED_RAYCRONJOB, decisions.SUSPENDED_MESSAGE
            )
        state.headline = step.headline
        self._publish_state()
        workflow.set_current_details(self._summary())

    async def _sync(
        self, sync: contract.SyncScheduleInput, synced: Synced, snap: contract.CronJobSnapshot
    ) -> bool:
        """Write the Schedule; False when the Temporal server refused it (reported here)."""
        state = self._state
        try:
            result = await execute(contract.SYNC_SCHEDULE, sync, summary=_sync_summary(sync))
        except ActivityError as err:
            refusal = _refusal(err)
            if refusal is None:
                raise
            # Not again for this spec: the next edit or resync tries again.
            state.synced, state.resync, state.headline = synced, False, decisions.INVALID
            state.reported_generation = snap.generation
            state.remember(refusal)
            await self._event(
                EventType.WARNING,
                constants.EVENT_INVALID_RAYCRONJOB_SPEC,
                f"{self._ref.namespace}/{self._ref.name}: {refusal}",
            )
            self._publish_state()
            return False
        state.remember(_sync_decision(result))
        state.synced, state.resync = synced, False
        skipped = decisions.skipped_message(self._ref, result)
        if skipped is not None:
            await self._event(EventType.WARNING, constants.EVENT_SKIPPED_MISSED_TICKS, skipped)
        return True

    async def _delete_schedule(self) -> None:
        await execute(
            contract.DELETE_SCHEDULE,
            contract.ScheduleRef(ref=self._ref),
            summary="delete the Schedule: the RayCronJob is gone",
        )
        self._state.remember("RayCronJob deleted: Schedule deleted")

    async def _write_user_suspend(self) -> None:
        wanted, self._state.user_suspend = self._state.user_suspend, None
        assert wanted is not None
        verb = "suspend" if wanted else "resume"
        await execute(
            contract.SET_RAYCRONJOB_SUSPEND,
            contract.SetCronJobSuspendInput(ref=self._ref, suspend=wanted),
            summary=f"write spec.suspend={str(wanted).lower()} ({verb} signal)",
        )
        self._state.remember(f"{verb} requested by signal: spec.suspend set to {wanted}")

    async def _event(self, kind: EventType, reason: str, message: str) -> None:
        await execute(
            contract.RECORD_EVENT,
            contract.RecordEventInput(
                ref=self._ref, event=contract.EventSpec(type=kind, reason=reason, message=message)
            ),
            summary=f"record Event {reason}",
        )


def _refusal(err: ActivityError) -> str | None:
    """The Temporal server's refusal of the Schedule behind `err`, if that is what it is."""
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.type == contract.INVALID_SCHEDULE_ERROR:
        return cause.message
    return None


def _sync_summary(sync: contract.SyncScheduleInput) -> str:
    if sync.wanted is None:
        return "pause the Schedule: the spec is invalid"
    zone = sync.wanted.time_zone or "UTC"
    state = "paused" if sync.paused else "running"
    return f"write the Schedule: {sync.wanted.cron!r} in {zone}, {state}"


def _sync_decision(result: contract.SyncScheduleResult) -> str:
    if result.action == contract.SyncScheduleAction.NOTHING:
        return "no Schedule: nothing valid to schedule yet"
    text = f"Schedule {result.action.value}, {'paused' if result.paused else 'firing'}"
    if result.made_up is not None:
        text += f"; ticks since {result.made_up.isoformat()} made up"
    if result.skipped:
        text += f", {result.skipped} before them skipped"
    return text
