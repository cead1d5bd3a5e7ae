"""The Redis cleanup finalizer's side effects: add or remove it, clear the pods, run the Job.

Finalizer edits are read-modify-write with the object's resourceVersion as a precondition,
so a concurrent writer (the autoscaler, kubectl) is never overwritten; a conflict is retried
by the activity's retry policy. The Events say what happened in KubeRay's words, and never
carry the Redis password (it is not in anything this module reads into a message).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from activities import builders, events
from activities.builders.gcs_ft import external_storage_namespace
from activities.builders.redis_cleanup_job import build_redis_cleanup_job
from activities.contract import Written
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import NAMESPACE_TERMINATING, KubeForbidden, KubeRejected
from activities.kube.recent import version_of
from activities.kube.vocabulary import EventType
from activities.raycluster import contract
from activities.raycluster.contract import CleanupStep as Step
from crds.constants import FINALIZER_GCS_FT_REDIS_CLEANUP, LABEL_CLUSTER
from crds.raycluster import RayCluster
from crds.refs import ObjectRef

NO_JOB_IN_TERMINATING_NAMESPACE = "the namespace is being deleted, so no cleanup Job can be created"


class ClusterCleanupActivities:
    """One activity, dispatching on the cleanup step."""

    def __init__(self, client: KubeClient, options: builders.BuildOptions) -> None:
        self._kube = client
        self._options = options

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration."""
        return [self.step]

    @activity.defn(name=contract.CLEANUP_CLUSTER.name)
    async def step(self, params: contract.CleanupStepInput) -> Written:
        """Do one cleanup step; a step that no longer applies is a no-op.

        Returns the RayCluster's version after a finalizer write (0: none was written).
        """
        ref = params.ref
        obj = await self._kube.get_or_none(kube.RAYCLUSTERS, ref.namespace, ref.name)
        if obj is None or obj["metadata"].get("uid") != ref.uid:
            return Written()
        cluster = RayCluster.model_validate(obj)
        if params.step == Step.ADD_FINALIZER:
            return await self._set_finalizer(obj, present=True)
        if params.step == Step.DELETE_PODS:
            selector = f"{LABEL_CLUSTER}={ref.name}"
            await self._kube.delete_collection(kube.PODS, ref.namespace, selector)
        elif params.step == Step.CREATE_JOB:
            if not await self._create_job(ref, cluster):
                reason = NO_JOB_IN_TERMINATING_NAMESPACE
                return await self._force_remove(ref, obj, cluster, reason)
        elif params.step == Step.REMOVE_FINALIZER:
            return await self._set_finalizer(obj, present=False)
        elif params.step == Step.FORCE_REMOVE_FINALIZER:
            return await self._force_remove(ref, obj, cluster, params.reason)
        return Written()

    async def _force_remove(
        self, ref: ObjectRef, obj: kube.JSON, cluster: RayCluster, reason: str
    ) -> Written:
        written = await self._set_finalizer(obj, present=False)
        message = (
            f"Force-removed the GCS FT finalizer: {reason}; Redis storage "
            f"namespace {external_storage_namespace(cluster)!r} may need manual cleanup"
        )
        try:
            await self._event(ref, EventType.WARNING, "ForceDeletedStuckCluster", message)
        except KubeRejected:
            # A namespace being deleted takes no Event (and may be gone by now): the log has it.
            if reason != NO_JOB_IN_TERMINATING_NAMESPACE:
                raise
            activity.logger.warning("%s: %s", ref, message)
        return written

    async def _create_job(self, ref: ObjectRef, cluster: RayCluster) -> bool:
        """Create the cleanup Job; False when its namespace is being deleted (none can be).

        The API server's refusal says so (its NamespaceLifecycle check): the worker needs no
        right to read Namespace objects, which a namespaced install does not grant.
        """
        job = build_redis_cleanup_job(cluster, self._options)
        try:
            _, created = await self._kube.create_or_get(kube.JOBS, ref.namespace, job)
        except KubeRejected as err:
            if isinstance(err, KubeForbidden) and NAMESPACE_TERMINATING in err.causes:
                return False
            await self._event(ref, EventType.WARNING, "FailedToCreateRedisCleanupJob", str(err))
            raise
        if created:
            message = f"Created Redis cleanup Job {ref.namespace}/{job['metadata']['name']}"
            await self._event(ref, EventType.NORMAL, "CreatedRedisCleanupJob", message)
        return True

    async def _set_finalizer(self, obj: kube.JSON, present: bool) -> Written:
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if (FINALIZER_GCS_FT_REDIS_CLEANUP in finalizers) == present:
            return Written()
        if present:
            finalizers.append(FINALIZER_GCS_FT_REDIS_CLEANUP)
        else:
            finalizers.remove(FINALIZER_GCS_FT_REDIS_CLEANUP)
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
        written = await self._kube.patch(kube.RAYCLUSTERS, meta["namespace"], meta["name"], patch)
        return Written(version=version_of(written))

    async def _event(self, ref: ObjectRef, kind: EventType, reason: str, message: str) -> None:
        info = activity.info()
        key = f"{info.workflow_run_id}/{info.activity_id}/{reason}"
        await events.record(self._kube, ref, kind, reason, message, key)
