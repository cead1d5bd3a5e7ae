"""The worker's watch of running Ray jobs: one loop asks Ray, no workflow holds a slot for it.

A Running RayJob needs someone to notice its Ray job's end. KubeRay requeues the RayJob every
3 s and asks the dashboard. An activity that stayed open for that would hold one of the
worker's activity slots for the job's whole length, and a worker has a fixed number of them:
past that many long jobs, no new job's end would be seen, nor anything else scheduled.

So each worker keeps this loop instead. Every `interval` it takes the running Ray jobs from
its copy of the RayJobs (Running, with a job id and a cluster, Ray's status not yet terminal),
asks each cluster's dashboard about its job (`in_flight` at a time, through the head Service
the cluster owns, as the activities do) and, when Ray's answer differs from the last one it
had, nudges the RayJob's workflow (`nudge`: the worker signals `owned_changed`). The workflow
then asks for Ray's answer (`RayAnswers`: the watch's own, when a moment old), decides and
writes the status; it also asks on a timer of its own that backs off to minutes, so a lost
nudge costs a delay, never an outcome.

Nothing here has to survive a crash: after a restart the loop starts from the statuses the
workflows last wrote, so at worst a workflow is nudged once for nothing. Each worker watches
every running job it can see; with several workers each asks Ray (a read) and nudges.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pydantic import ValidationError

from activities.dashboard.access import DashboardConnector
from activities.dashboard.errors import DashboardError
from activities.kube.client import JSON
from activities.kube.informer import Informer
from activities.rayjob.contract import RayJobView
from activities.rayjob.ray_answers import INTERVAL, Asked, RayAnswers
from activities.rayjob.ray_effects import job_status_of, job_view
from crds.enums import JobDeploymentStatus, JobStatus
from crds.raycluster import RayCluster
from crds.refs import ObjectRef

logger = logging.getLogger(__name__)

IN_FLIGHT = 16
"""Dashboard calls one round has open at a time."""

Nudge = Callable[[ObjectRef], Awaitable[None]]


@dataclass(frozen=True)
class RunningJob:
    """A RayJob whose Ray job is running, as its status says: what the watch asks about."""

    ref: ObjectRef
    cluster_name: str
    job_id: str
    seen: RayJobView
    """Ray's answer as the status has it: whether found, reachable, and the job's status."""


def running_job(obj: JSON) -> RunningJob | None:
    """The RayJob as the watch sees it, or None when there is nothing to ask Ray about."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    if status.get("jobDeploymentStatus") != JobDeploymentStatus.RUNNING:
        return None
    job_id, cluster, uid = status.get("jobId"), status.get("rayClusterName"), meta.get("uid")
    if not (job_id and cluster and uid) or meta.get("deletionTimestamp"):
        return None
    if not all(isinstance(value, str) for value in (job_id, cluster, uid)):
        return None
    text = status.get("jobStatus") or ""
    job_status = job_status_of(text) if text else JobStatus.NEW
    if job_status.is_terminal:
        return None  # Ray never changes it again; what is left is the submitter's, the bridge's
    ref = ObjectRef(kind="RayJob", namespace=meta["namespace"], name=meta["name"], uid=uid)
    seen = RayJobView(
        reachable=status.get("jobStatusCheckFailureStartTime") is None,
        found=bool(text),
        status=job_status,
    )
    return RunningJob(ref=ref, cluster_name=cluster, job_id=job_id, seen=seen)


class RayJobWatch:
    """Asks Ray about every running job in the worker's copies; nudges workflows on news."""

    def __init__(
        self,
        connector: DashboardConnector,
        rayjobs: Informer,
        clusters: Informer,
        nudge: Nudge,
        answers: RayAnswers | None = None,
        interval: float = INTERVAL,
        in_flight: int = IN_FLIGHT,
    ) -> None:
        self._connector = connector
        self._answers = answers or RayAnswers()
        self._rayjobs = rayjobs
        self._clusters = clusters
        self._nudge = nudge
        self._interval = interval
        self._in_flight = asyncio.Semaphore(in_flight)
        self._last: dict[tuple[str, str], RayJobView] = {}
        """Ray's last answer by (RayJob uid, job id), for the jobs of the last round."""
        self._models: dict[tuple[str, str], tuple[str, RayCluster]] = {}
        """The clusters asked last round, by (namespace, name): their resourceVersion and model,
        which costs more to build than the call does."""

    async def run(self) -> None:
        """Round after round until cancelled; a round that fails is logged, not fatal."""
        while True:
            try:
                await self.round()
            except Exception:
                logger.exception("a round of the watch of running Ray jobs failed")
            await asyncio.sleep(self._interval)

    async def round(self) -> int:
        """Ask Ray about each running job once; returns how many workflows were nudged."""
        jobs = [job for job in self._rayjobs.summaries() if isinstance(job, RunningJob)]
        keys = {(job.ref.uid, job.job_id) for job in jobs}
        self._last = {key: view for key, view in self._last.items() if key in keys}
        self._answers.keep_only({_asked(job) for job in jobs})
        names = {(job.ref.namespace, job.cluster_name) for job in jobs}
        self._models = {key: kept for key, kept in self._models.items() if key in names}
        nudged = await asyncio.gather(*(self._check(job) for job in jobs))
        return sum(nudged)

    async def _check(self, job: RunningJob) -> bool:
        try:
            async with self._in_flight:
                view = await self._ask(job)
        except Exception as err:  # one job's trouble (its Secret unreadable...) is not the round's
            logger.warning("could not ask Ray about %s: %s", job.ref, err)
            return False
        if view is None:
            return False
        key = (job.ref.uid, job.job_id)
        self._answers.keep(_asked(job), view)
        if view.same_as(self._last.get(key, job.seen)):
            self._last[key] = view
            return False
        try:
            await self._nudge(job.ref)
        except Exception as err:  # the next round tries again: nothing remembered
            logger.warning("could not nudge the workflow of %s: %s", job.ref, err)
            self._last.pop(key, None)
            return False
        self._last[key] = view
        return True

    async def _ask(self, job: RunningJob) -> RayJobView | None:
        """Ray's answer; None when the copy holds no such cluster (the workflow's timer asks)."""
        cluster = self._cluster(job.ref.namespace, job.cluster_name)
        if cluster is None:
            return None
        try:
            async with self._connector.open(cluster) as dashboard:
                return await job_view(dashboard, job.job_id)
        except DashboardError as err:  # no head Service of its own to call: unreachable
            return RayJobView(reachable=False, error=str(err))

    def _cluster(self, namespace: str, name: str) -> RayCluster | None:
        obj = self._clusters.get(namespace, name)
        if obj is None:
            return None
        version = str(obj["metadata"].get("resourceVersion", ""))
        kept = self._models.get((namespace, name))
        if kept is None or kept[0] != version or not version:
            try:
                kept = (version, RayCluster.model_validate(obj))
            except ValidationError:  # its own workflow says why; nothing to call here
                return None
            self._models[(namespace, name)] = kept
        return kept[1]


def _asked(job: RunningJob) -> Asked:
    return (job.ref.uid, job.cluster_name, job.job_id)
