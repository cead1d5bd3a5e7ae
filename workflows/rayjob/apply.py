"""Carry out the RayJob state machine's actions as activities, and fold their results back.

Part of the workflow's glue (workflow code, which the tests run in the strict sandbox): each
action becomes one activity with a timeout and an explicit retry policy. Kubernetes writes
retry until they succeed, as KubeRay requeues; calls to Ray give up after a few tries and
report the dashboard as unreachable instead, because the state machine has a rule (and a
clock) for that.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.contract import ActivityRef
    from activities.rayjob import contract
    from crds.enums import DeletionPolicyType
    from crds.rayjob import RayJobStatus
    from crds.refs import ObjectRef
    from workflows.activity_calls import KUBE, RAY_JOB, CallPolicy, execute_where
    from workflows.patches import Patches
    from workflows.rayjob import actions as act
    from workflows.rayjob.machine import TEARDOWN
    from workflows.rayjob.patching import LOCAL_PATCH
    from workflows.rayjob.state import RayJobState

InputT = TypeVar("InputT")
ResultT = TypeVar("ResultT")

Policy = DeletionPolicyType
FIRST_ANSWER = timedelta(seconds=3)
"""How long after a submission Ray is first asked about the job (KubeRay's requeue)."""


class Applier:
    """Runs actions for one RayJob workflow; shares the workflow's state object."""

    def __init__(self, ref: ObjectRef, state: RayJobState, patches: Patches) -> None:
        self._ref, self._state, self._patches = ref, state, patches
        self._read_version = ""
        """The RayJob's version at the last read: the status write reuses that read."""

    async def read(self) -> contract.JobSnapshot:
        """One snapshot of the RayJob, its cluster and its submitter."""
        state = self._state
        known = state.generation if state.spec is not None else None
        cluster = state.status.ray_cluster_name if state.status else None
        status = state.status.job_deployment_status if state.status else None
        unmade = cluster is not None and state.attempt.cluster_to_create
        snap = await self._call(
            contract.READ_RAYJOB,
            contract.ReadJobInput(
                ref=self._ref,
                known_generation=known,
                cluster_name=None if unmade else cluster,
                cluster_as_of=state.cluster_as_of,
                as_of=state.rayjob_as_of,
                count_left_pods=status in TEARDOWN,
            ),
            summary="read the RayJob, its RayCluster and its submitter",
        )
        if unmade and snap.exists:  # not read: a GET and a LIST of pods that find nothing
            snap.cluster = contract.ClusterView(name=cluster or "", exists=False)
        self._read_version = snap.resource_version
        return snap

    async def run(self, action: act.Action) -> bool:
        """Carry out one action; True when the pass should be repeated at once."""
        # Dispatch by class name: the sandbox may hold its own copy of the action classes, so
        # isinstance() against this module's classes is not reliable across that boundary.
        handlers: dict[str, Callable[[Any], Awaitable[bool]]] = {
            "AddFinalizer": self._add_finalizer,
            "CreateCluster": self._create_cluster,
            "CreateSubmitter": self._create_submitter,
            "EnsureHeadService": self._ensure_head_service,
            "SubmitJob": self._submit,
            "DeleteAttempt": self._delete_attempt,
            "ApplyDeletionRule": self._deletion_rule,
            "RecordEvent": self._record_event,
        }
        return await handlers[type(action).__name__](action)

    async def write_status(self, status: RayJobStatus) -> None:
        """Replace the RayJob's status subresource."""
        params = contract.WriteJobStatusInput(
            ref=self._ref, status=status, read_version=self._read_version
        )
        summary = f"write status {status.job_deployment_status or 'New'}"
        written: contract.Written | None = await self._call(
            contract.WRITE_RAYJOB_STATUS, params, summary=summary
        )
        self._wrote(written)

    async def set_finalizer(self, present: bool) -> None:
        """Add or remove the RayJob finalizer."""
        params = contract.SetFinalizerInput(
            ref=self._ref, present=present, as_of=self._state.rayjob_as_of
        )
        verb = "add" if present else "remove"
        written = await self._call(
            contract.SET_RAYJOB_FINALIZER, params, summary=f"{verb} the finalizer"
        )
        self._wrote(written)
        if written is not None and written.version:
            # The pass's status write comes next: against this write, not the pass's read,
            # which the write made stale (a 409, a GET and the write again).
            self._read_version = str(written.version)
        self._state.has_finalizer = present

    async def set_suspend(self, wanted: bool) -> None:
        """Write a person's suspend/resume to `spec.suspend`, so kubectl agrees."""
        verb = "suspend" if wanted else "resume"
        params = contract.SetJobSuspendInput(ref=self._ref, suspend=wanted)
        summary = f"write spec.suspend={str(wanted).lower()} ({verb} signal)"
        written: contract.Written | None = await self._call(
            contract.SET_RAYJOB_SUSPEND, params, summary=summary
        )
        self._wrote(written)
        self._state.remember(f"{verb} requested by signal: spec.suspend set to {wanted}")

    # --- one function per action --------------------------------------------------------------

    async def _add_finalizer(self, action: act.AddFinalizer) -> bool:
        await self.set_finalizer(True)
        return False

    async def _ensure_head_service(self, action: act.EnsureHeadService) -> bool:
        params = contract.EnsureHeadServiceInput(
            ref=self._ref,
            cluster_name=action.cluster_name,
            as_of=self._state.rayjob_as_of,
            cluster_as_of=self._state.cluster_as_of,
        )
        summary = f"point {self._ref.name}-head-svc at {action.cluster_name}"
        await self._call(contract.ENSURE_RAYJOB_HEAD_SERVICE, params, summary=summary)
        return False

    async def _record_event(self, action: act.RecordEvent) -> bool:
        event = contract.EventSpec(type=action.type, reason=action.reason, message=action.message)
        params = contract.RecordEventInput(ref=self._ref, event=event)
        await self._call(contract.RECORD_EVENT, params, summary=f"record Event {action.reason}")
        return False

    async def _create_cluster(self, action: act.CreateCluster) -> bool:
        params = contract.CreateClusterInput(
            ref=self._ref,
            cluster_name=action.cluster_name,
            job_id=action.job_id,
            attempt=self._state.attempt.number,
            as_of=self._state.rayjob_as_of,
        )
        summary = f"create RayCluster {action.cluster_name}"
        result = await self._create(contract.CREATE_RAYJOB_CLUSTER, params, summary)
        attempt = self._state.attempt
        self._state.attempt = attempt.model_copy(update={"cluster_to_create": False})
        # The cluster existed at this version: a copy that has seen it and lacks it saw it go.
        self._state.cluster_as_of = max(self._state.cluster_as_of, result.version)
        if result.created:
            self._remember(f"created RayCluster {action.cluster_name}")
        return False

    async def _create_submitter(self, action: act.CreateSubmitter) -> bool:
        params = contract.CreateSubmitterInput(
            ref=self._ref,
            cluster_name=action.cluster_name,
            job_id=action.job_id,
            attempt=self._state.attempt.number,
            as_of=self._state.rayjob_as_of,
            cluster_as_of=self._state.cluster_as_of,
        )
        summary = f"create the submitter Job for {action.job_id}"
        result = await self._create(contract.CREATE_SUBMITTER_JOB, params, summary)
        if result.created:
            self._remember(f"created the submitter Job for job {action.job_id}")
        return False

    async def _submit(self, action: act.SubmitJob) -> bool:
        state = self._state
        params = contract.SubmitRayJobInput(
            ref=self._ref,
            cluster_name=action.cluster_name,
            job_id=action.job_id,
            as_of=state.rayjob_as_of,
        )
        try:
            result = await self._call(
                contract.SUBMIT_RAY_JOB,
                params,
                summary=f"submit Ray job {action.job_id}",
                policy=RAY_JOB,
            )
        except ActivityError as err:
            result = contract.SubmitRayJobResult(submitted=False, error=str(err.cause or err))
        if not result.submitted:
            # The state machine starts (or keeps) the status-check failure clock.
            view = contract.RayJobView(reachable=False, error=result.error)
            state.attempt = state.attempt.model_copy(update={"ray_job": view})
            state.poll_at = workflow.now() + timedelta(seconds=3)
            return False
        verb = "re-submitted" if action.resubmit else "submitted"
        already = " (Ray already had it)" if result.duplicate else ""
        self._remember(f"{verb} Ray job {action.job_id}{already}")
        state.attempt = state.attempt.model_copy(update={"submitted": True, "ray_job": None})
        # Ray's first answer in a moment, as KubeRay's next reconcile (its 3 s requeue), or at
        # the watch's news: asked at once, it said PENDING, a status write for that alone.
        state.poll_at = workflow.now() + FIRST_ANSWER
        return True

    async def _delete_attempt(self, action: act.DeleteAttempt) -> bool:
        params = contract.DeleteAttemptInput(
            ref=self._ref,
            cluster_name=action.cluster_name,
            delete_cluster=action.delete_cluster,
            delete_submitter=action.delete_submitter,
            cluster_as_of=self._state.cluster_as_of,
        )
        summary = f"delete attempt {self._state.attempt.number} ({action.cluster_name})"
        result = await self._call(contract.DELETE_ATTEMPT, params, summary=summary)
        return not result.remaining

    async def _deletion_rule(self, action: act.ApplyDeletionRule) -> bool:
        name = action.cluster_name or ""
        if action.policy == Policy.DELETE_WORKERS:
            workers = contract.SuspendWorkersInput(ref=self._ref, cluster_name=name)
            await self._call(
                contract.SUSPEND_WORKERS, workers, summary=f"suspend workers of {name}"
            )
        elif action.policy == Policy.DELETE_CLUSTER:
            cluster = contract.DeleteAttemptInput(
                ref=self._ref,
                cluster_name=name,
                delete_cluster=True,
                delete_submitter=False,
                cluster_as_of=self._state.cluster_as_of,
            )
            await self._call(contract.DELETE_ATTEMPT, cluster, summary=f"delete {name}")
        elif action.policy == Policy.DELETE_SELF:
            await self._call(
                contract.DELETE_RAYJOB,
                contract.RayJobRef(ref=self._ref),
                summary="delete the RayJob",
            )
        self._remember(f"cleanup {action.policy} ({action.source})")
        return action.policy != Policy.DELETE_NONE

    # --- helpers --------------------------------------------------------------------------------

    async def _create(
        self, ref: ActivityRef[InputT, contract.CreateResult], params: InputT, summary: str
    ) -> contract.CreateResult:
        """A create whose activity builds from the RayJob as it reads it, edited or not.

        An edit made since this pass validated the spec can make that build impossible (an
        alias bomb in `runtimeEnvYAML`); the activity then fails for good, and the edit's
        own pass, signalled by the bridge, validates it and ends in ValidationFailed. Not
        repeating the pass here keeps a refusal from spinning if it ever had another cause.
        """
        try:
            return await self._call(ref, params, summary=summary)
        except ActivityError as err:
            cause = err.cause
            if not (
                isinstance(cause, ApplicationError) and cause.type == contract.INVALID_SPEC_ERROR
            ):
                raise
            self._remember(f"{summary}: refused, {cause.message}")
            return contract.CreateResult(created=False)

    async def _call(
        self,
        ref: ActivityRef[InputT, ResultT],
        params: InputT,
        *,
        summary: str,
        policy: CallPolicy = KUBE,
    ) -> ResultT:
        """One short call: local, unless the run began before the patch (its history)."""
        local = self._patches.on(LOCAL_PATCH)
        return await execute_where(local, ref, params, summary=summary, policy=policy)

    def _wrote(self, written: contract.Written | None) -> None:
        """Read the RayJob at least as new as this write from now on.

        None: a write recorded before writes returned their version (an older history).
        """
        if written is not None:
            self._state.rayjob_as_of = max(self._state.rayjob_as_of, written.version)

    def _remember(self, line: str) -> None:
        self._state.remember(f"attempt {self._state.attempt.number}: {line}")
