"""The RayJob workflow: the Temporal glue around the pure RayJob state machine.

One workflow per RayJob, alive as long as the CR. A pass reads a snapshot, validates, asks
`machine.decide` for the next step, runs its actions, settles and writes the status, and, in
Running, asks Ray about the job (one quick question; no activity stays open while the job
runs). Signals only mark a pass as due;
deadlines and cleanup TTLs are absolute times in the status, re-armed as durable timers after
every pass and after a continue-as-new.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.rayjob import contract
    from crds import constants
    from crds.enums import JobDeploymentStatus as Deploy
    from crds.enums import JobSubmissionMode as Mode
    from crds.rayjob import RayJob, RayJobSpec, RayJobStatus
    from crds.validation import validate
    from crds.violations import reported
    from workflows import messages
    from workflows.activity_calls import RAY_JOB, execute, execute_local
    from workflows.entity import CrWorkflow
    from workflows.patches import Patches
    from workflows.rayjob import machine, naming
    from workflows.rayjob.apply import Applier
    from workflows.rayjob.facts import Facts, Step
    from workflows.rayjob.patching import (
        CLUSTER_STATUS_PATCH,
        COVERINGS,
        IDLE_PATCH,
        NAMES_PATCH,
        REFIT_PATCH,
        SIDECAR_END_PATCH,
        STALE_VIEW_PATCH,
        STEADY_TIMER_PATCH,
        UNREADABLE_PATCH,
    )
    from workflows.rayjob.state import RayJobInput, RayJobState
    from workflows.rayjob.status import settle, status_changed
    from workflows.resync import ResyncTimer

RESYNC = timedelta(seconds=300)
"""KubeRay's RayCluster resync; a running Ray job is asked about on `poll_at` instead."""
BUSY_RESYNC = timedelta(seconds=5)
POLL_GAP = timedelta(seconds=3)
"""Ask Ray this soon (KubeRay's 3 s requeue) after its answer changed..."""
MAX_POLL_GAP = timedelta(minutes=10)
"""...and back off to this while its answers stay the same. No activity stays open while a
job runs, so a worker's slots never run out; the worker's watch of running Ray jobs nudges the
workflow as soon as Ray's answer changes (`activities.rayjob.ray_watch`), and these questions
only stand in for a nudge that was lost, so a lost one costs ten minutes at most. A running
job costs six questions an hour (about 13 actions, 45 events; new runs keep each history near
a hundred events)."""
NEW_RUN_GAP = timedelta(milliseconds=1)
"""The timer that puts a continue-as-new in a workflow task of its own."""
IDLE_STATES = frozenset(
    {Deploy.COMPLETE, Deploy.FAILED, Deploy.VALIDATION_FAILED, Deploy.SUSPENDED}
)


@workflow.defn(name="RayJob")
class RayJobWorkflow(CrWorkflow[RayJobState]):
    """Run one RayJob through KubeRay's state machine, for as long as the CR exists."""

    @workflow.init
    def __init__(self, params: RayJobInput) -> None:
        self._ref = params.ref
        self._state = params.state or RayJobState()
        self._max_history = params.max_history_events
        self._patches = Patches(*COVERINGS, given=params.patches)
        self._resync = ResyncTimer()
        self._apply = Applier(self._ref, self._state, self._patches)
        self._nudged = False
        """A signal came in since the last poll: ask Ray now, even within the poll gap."""
        self._ray_news = False
        """The worker's watch saw Ray's answer change since the last poll: ask it now."""

    # --- what differs from `CrWorkflow` ---------------------------------------------------------

    def _spec_changed(self, change: messages.SpecChanged) -> None:
        self._state.dirty = self._nudged = True
        self._state.rayjob_as_of = max(self._state.rayjob_as_of, change.version)

    def _deleted(self, change: messages.Deleted) -> None:
        self._state.rayjob_as_of = max(self._state.rayjob_as_of, change.version)

    def _owned_changed(self, change: messages.OwnedChanged) -> None:
        """The RayCluster, the submitter Job or the head pod changed, or Ray's answer did."""
        self._state.dirty = self._nudged = True
        self._ray_news = self._ray_news or messages.RAY_JOB_KIND in change.kinds
        cluster = change.versions.get("RayCluster", 0)
        self._state.cluster_as_of = max(self._state.cluster_as_of, cluster)

    def _waiting_for(self) -> list[str]:
        return [self._state.waiting] if self._state.waiting else []

    # --- main loop ------------------------------------------------------------------------------

    @workflow.run
    async def run(self, params: RayJobInput) -> str:
        """Drive the RayJob until the CR is gone; returns a one-line epitaph."""
        self._patches.start()
        while True:
            await self._wait_for_work()
            if self._state.gone:
                break
            if self._state.user_suspend is not None:
                await self._write_user_suspend()
            await self._pass()
            if self._state.gone:
                break
            if self._should_continue_as_new() and await self._in_a_task_of_its_own():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    RayJobInput(
                        ref=self._ref,
                        state=self._state,
                        max_history_events=self._max_history,
                        patches=self._patches.newest,
                    )
                )
        await workflow.wait_condition(workflow.all_handlers_finished)
        return f"{self._ref} is gone after {self._state.passes} passes ({self._headline()})"

    async def _wait_for_work(self) -> None:
        state, now = self._state, workflow.now()
        wake = now + (BUSY_RESYNC if state.busy else RESYNC)
        if state.poll_at is not None and not state.busy:
            wake = state.poll_at  # the pass that asks Ray is the resync of a running job
        if state.wake_at is not None:
            wake = min(wake, state.wake_at)
        if not state.dirty and self._idle() and self._patches.on(IDLE_PATCH):
            # Nothing can change on its own: a periodic resync would only cost a timer and a
            # read every few minutes for as long as the CR is kept. Edits and deletion signal.
            if self._patches.on(STEADY_TIMER_PATCH):
                self._resync.disarm()  # armed for an earlier wait
            await workflow.wait_condition(lambda: state.dirty or state.gone)
        elif not state.dirty and wake > now:
            summary = f"waiting for {state.waiting or 'a change'}"
            if self._patches.on(STEADY_TIMER_PATCH):
                refit = self._patches.on(REFIT_PATCH)
                await self._resync.wait(
                    wake, summary, lambda: state.dirty or state.gone, refit=refit
                )
            else:
                with contextlib.suppress(asyncio.TimeoutError):  # a timer: the pass is due anyway
                    await workflow.wait_condition(
                        lambda: state.dirty or state.gone,
                        timeout=wake - now,
                        timeout_summary=summary,
                    )
        state.dirty = False

    async def _in_a_task_of_its_own(self) -> bool:
        """Cross into a workflow task of its own; whether a new run is still due there.

        A signal that comes in while a task closes the run makes Temporal refuse the task
        (UnhandledCommand), and with it the results of the local activities it ran, though
        their effects stand: the retried task would decide again on a changed world (a Ray job
        whose cluster it had just deleted). A task that only closes the run loses nothing.
        """
        await workflow.sleep(NEW_RUN_GAP, summary="go on in a new run")
        return self._should_continue_as_new()

    def _settled(self) -> bool:
        """Between passes everything is in the state; a pending `suspend` is written first.

        So a job that runs for hours goes on in a new run every hundred-odd events (from a task
        of its own, `_in_a_task_of_its_own`): its history, and what a worker keeps of it, stays
        that size however long the job runs.
        """
        return self._state.user_suspend is None

    def _idle(self) -> bool:
        state = self._state
        status = state.status
        clocks = state.wake_at is not None or state.poll_at is not None or state.busy
        return not clocks and status is not None and status.job_deployment_status in IDLE_STATES

    # --- one pass -------------------------------------------------------------------------------

    async def _pass(self) -> None:
        state = self._state
        state.passes += 1
        snap = await self._apply.read()
        if not snap.exists:
            state.gone = True
            return
        self._absorb(snap)
        if snap.deleting:
            await self._finalize()
            return
        spec = state.spec
        if spec is None and snap.schema_violations and self._patches.on(UNREADABLE_PATCH):
            # Never readable (a looser CRD let it in): still say why, with the field paths.
            spec = RayJobSpec()
        if spec is None or spec.managed_by == constants.MANAGED_BY_MULTIKUEUE:
            self._set_waiting("nothing: the RayJob is managed elsewhere or unreadable")
            return
        facts = Facts(
            name=self._ref.name,
            spec=spec,
            status=state.status or RayJobStatus(),
            attempt=state.attempt,
            cluster=snap.cluster,
            submitter=snap.submitter,
            has_finalizer=state.has_finalizer,
            options=snap.options,
            cluster_status_early=not self._patches.on(CLUSTER_STATUS_PATCH),
        )
        if facts.mode == Mode.SIDECAR and self._patches.on(SIDECAR_END_PATCH):
            facts = replace(facts, sidecar_catch_up=True)
        deadline = state.wake_at is not None and workflow.now() >= state.wake_at
        running = facts.status.job_deployment_status == Deploy.RUNNING
        # A pass the poll timer starts may read a finished submitter before the bridge's
        # signal about it arrives: Ray's last answer (say, "not found" from before the
        # submission) is then older than the submitter's end, and would fail a good job.
        stale = running and _submitter_outran_ray(facts) and self._patches.on(STALE_VIEW_PATCH)
        nudged = self._nudged and (self._ray_news or _answer_may_be_old(facts, state))
        if (nudged or deadline or stale) and running:
            # Something changed (Ray's answer, the submitter, the cluster) or a clock ran out:
            # decide on Ray's state as of now, not as of the last poll.
            await self._poll(peek=True)
            facts = replace(facts, attempt=state.attempt)
        elif not nudged:
            self._nudged = False  # a change moments after Ray answered: nothing to ask
        violations = snap.schema_violations or (
            snap.gate_violations + reported(validate(self._rayjob(facts)))
        )
        if violations:
            step = machine.validation_failed(facts, violations)
        else:
            if not self._patches.on(NAMES_PATCH):
                facts = replace(facts, name_alphabet=naming.LEGACY_ALPHABET)
            step = machine.decide(facts, workflow.now(), workflow.random())
        await self._carry_out(facts, step)

    async def _carry_out(self, facts: Facts, step: Step) -> None:
        state = self._state
        state.attempt = step.attempt
        for note in step.notes:
            state.remember(f"attempt {state.attempt.number}: {note}")
        again = step.again
        if not step.poll:
            # Only a job being polled has a next poll; an action may still ask for one (a
            # refused submission is tried again in a few seconds).
            state.poll_at = None
        for action in step.actions:
            again = await self._apply.run(action) or again
        status = settle(facts.spec, facts.status, step.status, workflow.now())
        status.observed_generation = state.generation
        if status_changed(state.status, status):
            await self._apply.write_status(status)
        state.status = status
        state.wake_at, state.busy = step.wake_at, step.busy
        self._set_waiting(step.waiting)
        self._publish_state()
        if step.poll and not again:
            again = await self._poll()
        state.dirty = state.dirty or again

    async def _poll(self, peek: bool = False) -> bool:
        """Ask Ray about the job, once; True when its answer moved.

        Unless a `peek` (something changed, or a clock ran out: ask now), a question asked
        moments ago is not asked again: `_wait_for_work` comes back at `poll_at`.
        """
        state = self._state
        status = state.status or RayJobStatus()
        now = workflow.now()
        # Paced once Ray answered in this attempt, or the job was submitted (its first question
        # waits for `FIRST_ANSWER`); a new attempt's first question is asked at once.
        paced = state.attempt.ray_job is not None or state.attempt.submitted
        recent = state.poll_at is not None and now < state.poll_at and paced
        if recent and not self._nudged and not peek:
            return False
        self._nudged = self._ray_news = False
        state.asked_at = now
        known = state.attempt.ray_job
        params = contract.AskRayJobInput(
            ref=self._ref, cluster_name=status.ray_cluster_name or "", job_id=status.job_id or ""
        )
        try:
            view = await execute_local(
                contract.ASK_RAY_JOB,
                params,
                summary=f"ask Ray for job {params.job_id}",
                policy=RAY_JOB,
            )
        except ActivityError as err:
            view = _unreachable(err)
        state.attempt = state.attempt.model_copy(update={"ray_job": view})
        changed = not view.same_as(known)
        state.poll_gap = POLL_GAP if changed else min(state.poll_gap * 2, MAX_POLL_GAP)
        state.poll_at = now + state.poll_gap
        return changed

    async def _finalize(self) -> None:
        """The CR is being deleted: stop the Ray job (best effort), release the finalizer (J26)."""
        state = self._state
        status = state.status or RayJobStatus()
        job_status = status.job_status
        cluster = status.ray_cluster_name
        running = status.dashboard_url and not (job_status and job_status.is_terminal)
        if status.job_id and cluster and running:
            with contextlib.suppress(ActivityError):
                await execute(
                    contract.STOP_RAY_JOB,
                    contract.StopRayJobInput(
                        ref=self._ref, cluster_name=cluster, job_id=status.job_id
                    ),
                    summary=f"stop Ray job {status.job_id} (the RayJob is being deleted)",
                    policy=RAY_JOB.within(timedelta(seconds=30)),
                )
            state.remember(f"stopped Ray job {status.job_id} (best effort): the RayJob is deleted")
        if state.has_finalizer:
            await self._apply.set_finalizer(False)
        state.gone = True

    async def _write_user_suspend(self) -> None:
        wanted = self._state.user_suspend
        self._state.user_suspend = None
        assert wanted is not None
        await self._apply.set_suspend(wanted)

    # --- helpers --------------------------------------------------------------------------------

    def _absorb(self, snap: contract.JobSnapshot) -> None:
        state = self._state
        if snap.spec is not None:
            state.spec, state.generation = snap.spec, snap.generation
        if snap.status is not None and state.status is None:
            state.status = snap.status
        state.labels, state.annotations = snap.labels, snap.annotations
        state.has_finalizer = snap.has_finalizer
        state.deleting = snap.deleting

    def _rayjob(self, facts: Facts) -> RayJob:
        state = self._state
        meta = self._ref.meta(state.generation, state.labels, state.annotations)
        return RayJob(metadata=meta, spec=facts.spec, status=facts.status)

    def _set_waiting(self, waiting: str) -> None:
        self._state.waiting = waiting
        workflow.set_current_details(self._summary())

    def _headline(self) -> str:
        status = self._state.status
        # "New" is KubeRay's empty state, which a retry passes through too (`Retrying` → New →
        # `Initializing`); the bridge starts a workflow in the state its first pass writes.
        return (status.job_deployment_status if status else None) or "New"

    def _summary(self) -> str:
        state = self._state
        status = state.status or RayJobStatus()
        line = f"**{self._ref}**: {self._headline()}"
        if status.job_status:
            line += f", Ray job {status.job_id} {status.job_status}"
        doing = f"attempt {state.attempt.number}: waiting for {state.waiting}"
        return f"{line}\n\n{doing}" if state.waiting else line


def _answer_may_be_old(facts: Facts, state: RayJobState) -> bool:
    """Whether a change of the cluster, its pods or the submitter is worth asking Ray again.

    Not within `POLL_GAP` of the last question (KubeRay's requeue; its workqueue folds a burst
    of events into one reconcile), and not before an HTTPMode submission (nothing asked then
    decides anything: the submission comes next, and takes a job Ray already has). News from
    the watch of running Ray jobs and a submitter that outran Ray's answer always ask.
    """
    if facts.mode == Mode.HTTP and not facts.attempt.submitted:
        return False
    asked = state.asked_at
    return asked is None or workflow.now() >= asked + POLL_GAP


def _submitter_outran_ray(facts: Facts) -> bool:
    """Whether the submitter has finished while Ray's last answer was not yet terminal."""
    submitter, view = facts.submitter, facts.attempt.ray_job
    finished = submitter is not None and submitter.finished_at is not None
    return finished and (view is None or not view.found or not view.status.is_terminal)


def _unreachable(err: ActivityError) -> contract.RayJobView:
    """Ray's answer when every attempt to ask failed: the dashboard did not answer."""
    return contract.RayJobView(reachable=False, error=str(err.cause or err))
