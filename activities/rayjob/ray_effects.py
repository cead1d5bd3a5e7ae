"""The RayJob's Ray activities: submit (HTTPMode), ask about the job, stop it (the finalizer).

`ask_ray_job` asks `GET /api/jobs/<id>` once and returns at once: no activity stays open while
a job runs, so a worker's slots do not run out however many long jobs there are. The workflow
asks on a timer that backs off, and the worker's watch of running Ray jobs
(`activities.rayjob.ray_watch`) nudges it as soon as Ray's answer changes.

Submission is exactly-once by construction: the submission id is fixed per attempt before
anything is submitted, and Ray refuses a second job under the same id, which counts as success.
Failures to reach the dashboard are reported as data (`reachable=False`, `submitted=False`),
not raised, because the state machine has a clock for them (J13); their messages never carry
a token (the dashboard client scrubs them).

The dashboard is the one of the RayCluster the workflow names, read in the RayJob's namespace,
through the head Service that cluster owns (`activities.dashboard.access`): no address is
taken from the RayJob's status, which may have been written by anyone before the workflow.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.builders.rayjob import (
    InvalidJobSpecError,
    entrypoint_resources_of,
    runtime_env_of,
)
from activities.dashboard.access import DashboardConnector
from activities.dashboard.client import RayDashboardClient
from activities.dashboard.contract import JobInfo, JobSubmission
from activities.dashboard.errors import (
    DashboardError,
    DashboardUnavailable,
    JobNotFound,
    JobNotStopped,
)
from activities.dashboard.heads import HeadServiceRefused
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.informer import Informer, cached_or_live, same_as_of
from activities.rayjob import contract
from activities.rayjob.ray_answers import RayAnswers
from crds.enums import JobStatus
from crds.raycluster import RayCluster
from crds.rayjob import RayJob, RayJobSpec
from crds.refs import ObjectRef

_ERROR_CHARS = 300


class RayJobActivities:
    """Dashboard calls for RayJobs, through a `DashboardConnector`."""

    def __init__(
        self,
        client: KubeClient,
        connector: DashboardConnector,
        rayjobs: Informer | None = None,
        clusters: Informer | None = None,
        answers: RayAnswers | None = None,
    ) -> None:
        self._kube = client
        self._connector = connector
        self._rayjobs = rayjobs
        self._clusters = clusters
        self._answers = answers

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration."""
        return [self.submit, self.ask, self.stop]

    @activity.defn(name=contract.SUBMIT_RAY_JOB.name)
    async def submit(self, params: contract.SubmitRayJobInput) -> contract.SubmitRayJobResult:
        """`POST /api/jobs/` under the attempt's submission id; a duplicate is success (J7)."""
        rayjob, cluster = await self._read(params.ref, params.cluster_name, params.as_of)
        if rayjob is None:
            return contract.SubmitRayJobResult(submitted=False, error="the RayJob no longer exists")
        if cluster is None:
            return contract.SubmitRayJobResult(submitted=False, error=_missing(params))
        try:
            submission = job_submission(rayjob.spec, params.job_id)
        except InvalidJobSpecError as err:
            raise ApplicationError(
                str(err), type=contract.INVALID_SPEC_ERROR, non_retryable=True
            ) from None
        try:
            async with self._connector.open(cluster) as dashboard:
                result = await dashboard.submit_job(submission)
        except DashboardError as err:
            return contract.SubmitRayJobResult(submitted=False, error=_short(err))
        activity.logger.info(
            "Ray job %s %s", params.job_id, "already known" if result.duplicate else "submitted"
        )
        return contract.SubmitRayJobResult(duplicate=result.duplicate)

    @activity.defn(name=contract.ASK_RAY_JOB.name)
    async def ask(self, params: contract.AskRayJobInput) -> contract.RayJobView:
        """Ask the dashboard about the job once (the workflow paces the questions).

        Answered by the worker's watch of running Ray jobs when it asked a moment ago: its
        news is what woke the workflow to ask.
        """
        if self._answers is not None:
            fresh = self._answers.fresh((params.ref.uid, params.cluster_name, params.job_id))
            if fresh is not None:
                return fresh
        _, cluster = await self._read(params.ref, params.cluster_name)
        if cluster is None:
            return contract.RayJobView(reachable=False, error=_missing(params))
        try:
            async with self._connector.open(cluster) as dashboard:
                return await job_view(dashboard, params.job_id)
        except DashboardError as err:  # no head Service to call: as unreachable as can be
            return contract.RayJobView(reachable=False, error=_short(err))

    @activity.defn(name=contract.STOP_RAY_JOB.name)
    async def stop(self, params: contract.StopRayJobInput) -> None:
        """`POST /api/jobs/<id>/stop`, best effort (the RayJob finalizer, J26)."""
        _, cluster = await self._read(params.ref, params.cluster_name)
        if cluster is None:
            activity.logger.info("stop of Ray job %s: %s", params.job_id, _missing(params))
            return
        try:
            async with self._connector.open(cluster) as dashboard:
                await dashboard.stop_job(params.job_id)
        except (JobNotFound, JobNotStopped, HeadServiceRefused) as err:
            # Nothing to stop, or Ray will not, or no head to ask: the finalizer goes anyway,
            # as in KubeRay.
            activity.logger.info("stop of Ray job %s: %s", params.job_id, _short(err))

    async def _read(
        self, ref: ObjectRef, cluster_name: str, as_of: int | None = None
    ) -> tuple[RayJob | None, RayCluster | None]:
        """The RayJob and the cluster the workflow named, in the RayJob's namespace.

        From the worker's copies when they hold them, as KubeRay reads from its cache. A
        submission names `as_of`: its spec must be at least the one the workflow decided on,
        so the copy serves once it has reached that version (else a live read). Waiting and
        stopping only need the cluster, its head Service and its token Secret's name, which a
        copy a moment old has right (a wait is called again and again while a job runs).
        """
        key = (ref.namespace, ref.name)
        if as_of is None:
            obj = await cached_or_live(self._kube, self._rayjobs, kube.RAYJOBS, *key)
        else:
            obj = await same_as_of(self._kube, self._rayjobs, kube.RAYJOBS, key, ref.uid, as_of)
        if obj is None or obj["metadata"].get("uid") != ref.uid:
            return None, None
        rayjob = RayJob.model_validate(obj)
        if not cluster_name:
            return rayjob, None
        cluster = await cached_or_live(
            self._kube, self._clusters, kube.RAYCLUSTERS, ref.namespace, cluster_name
        )
        return rayjob, None if cluster is None else RayCluster.model_validate(cluster)


def job_submission(spec: RayJobSpec, job_id: str) -> JobSubmission:
    """The HTTP body KubeRay's `ConvertRayJobToReq` builds from a RayJob spec (J1, J23–J25).

    Raises:
        InvalidJobSpecError: `runtimeEnvYAML` or `entrypointResources` cannot be used.
    """
    return JobSubmission(
        entrypoint=(spec.entrypoint or "").strip(),
        submission_id=job_id,
        runtime_env=runtime_env_of(spec) or None,
        metadata=dict(spec.metadata) if spec.metadata else None,
        entrypoint_num_cpus=float(spec.entrypoint_num_cpus) if spec.entrypoint_num_cpus else None,
        entrypoint_num_gpus=float(spec.entrypoint_num_gpus) if spec.entrypoint_num_gpus else None,
        entrypoint_resources=entrypoint_resources_of(spec),
    )


async def job_view(dashboard: RayDashboardClient, job_id: str) -> contract.RayJobView:
    """One `GET /api/jobs/<id>` as the state machine sees it."""
    try:
        info = await dashboard.job_info(job_id)
    except JobNotFound:
        return contract.RayJobView(found=False)
    except DashboardUnavailable as err:
        return contract.RayJobView(reachable=False, error=_short(err))
    except DashboardError as err:
        return contract.RayJobView(reachable=False, error=_short(err))
    return view_of(info)


def job_status_of(text: str) -> JobStatus:
    """Ray's status of a job as the state machine reads it: one newer than ours is PENDING."""
    try:
        return JobStatus(text)
    except ValueError:
        return JobStatus.PENDING


def view_of(info: JobInfo) -> contract.RayJobView:
    """A dashboard `JobInfo` reduced to the view."""
    return contract.RayJobView(
        found=True,
        status=job_status_of(info.status),
        message=info.message,
        start_time_ms=_ms(info.start_time),
        end_time_ms=_ms(info.end_time),
    )


def _ms(moment: datetime | None) -> int:
    return 0 if moment is None else int(moment.timestamp() * 1000)


def _missing(params: contract.RayJobDashboardInput) -> str:
    return f"RayCluster {params.cluster_name or '(none named)'} does not exist"


def _short(err: Exception) -> str:
    text = str(err)
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"
