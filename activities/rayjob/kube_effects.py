"""The RayJob's Kubernetes activities: read one snapshot, create, delete and write.

Every method may run twice (a retry, a worker killed mid-call): objects get the names the
workflow chose, creates that find their object report `created=False`, deletes tolerate 404,
Events have names derived from the activity, and the status is replaced as a whole. Each
activity re-reads the RayJob and checks its uid, so a RayJob re-created under the same name is
never touched by the old one's workflow, and builds manifests from what it read: the history
carries names, never templates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import builders, events
from activities.builders import names
from activities.builders.batch_scheduling import volcano_group_name
from activities.builders.rayjob import (
    InvalidJobSpecError,
    build_rayjob_cluster,
    build_rayjob_head_service,
    build_submitter_job,
    rayjob_head_service_name,
    submitter_job_name,
)
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeNotFound, KubeRejected
from activities.kube.informer import Informer, same_as_of
from activities.kube.recent import RecentReads, replace_status, version_number, version_of
from activities.kube.spans import stamp_trace_context
from activities.kube.vocabulary import EventType
from activities.kuberay_metrics import KubeRayMetrics
from activities.rayjob import contract
from activities.rayjob.pod_group import JobPodGroup
from activities.rayjob.views import JobViews
from crds.constants import FINALIZER_RAYJOB, LABEL_CLUSTER
from crds.enums import JobSubmissionMode
from crds.loading import parse_ray_object
from crds.raycluster import RayCluster, RayClusterStatus
from crds.rayjob import RayJob
from crds.redaction import redacted_job_spec
from crds.refs import ObjectRef
from crds.validation.gates import gate_violations
from crds.violations import InvalidObjectError, reported


class JobActivities:
    """RayJob side effects against one Kubernetes API."""

    def __init__(
        self,
        client: KubeClient,
        options: builders.BuildOptions,
        metrics: KubeRayMetrics | None = None,
        job_options: contract.JobOperatorOptions | None = None,
        services: Informer | None = None,
        clusters: Informer | None = None,
        rayjobs: Informer | None = None,
        pods: Informer | None = None,
    ) -> None:
        self._kube = client
        self._options = options
        self._job_options = job_options or contract.JobOperatorOptions()
        self._metrics = metrics
        self._views = JobViews(client, options.cluster_domain, services, clusters, pods)
        self._recent = RecentReads()
        self._rayjobs = rayjobs
        self._pod_group = JobPodGroup(client, options.batch_scheduler)

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration.

        `record_event` is not among them: the RayCluster activities register that name, and
        it records an Event on any ray.io object.
        """
        return [
            self.read,
            self.create_cluster,
            self.create_submitter,
            self.delete_attempt,
            self.suspend_workers,
            self.delete_rayjob,
            self.ensure_head_service,
            self.write_status,
            self.set_suspend,
            self.set_finalizer,
        ]

    # --- the snapshot ---------------------------------------------------------------------------

    @activity.defn(name=contract.READ_RAYJOB.name)
    async def read(self, params: contract.ReadJobInput) -> contract.JobSnapshot:
        """Read the RayJob, the attempt's RayCluster (pods, head Service) and its submitter."""
        ref = params.ref
        obj = await self._own_as_of(ref, params.as_of)
        if obj is None:
            return contract.JobSnapshot(exists=False)
        meta = obj["metadata"]
        finalizers = meta.get("finalizers") or []
        snap = contract.JobSnapshot(
            resource_version=self._recent.keep(kube.RAYJOBS, obj),
            options=self._job_options,
            generation=int(meta.get("generation") or 0),
            deleting=bool(meta.get("deletionTimestamp")),
            has_finalizer=FINALIZER_RAYJOB in finalizers,
            labels=dict(meta.get("labels") or {}),
            annotations=names.without_last_applied(meta.get("annotations")),
        )
        try:
            rayjob = parse_ray_object(obj)
        except InvalidObjectError as err:
            snap.schema_violations = reported(err.violations)
            return snap
        assert isinstance(rayjob, RayJob)
        snap.gate_violations = reported(gate_violations(rayjob, self._options.feature_gates))
        if params.known_generation != snap.generation:
            # Inline secrets (a Redis password, a token in an env var) must not reach the
            # workflow history.
            snap.spec = redacted_job_spec(rayjob.spec)
        if params.known_generation is None:
            snap.status = rayjob.status
        if params.cluster_name:
            mode = rayjob.spec.submission_mode or JobSubmissionMode.K8S_JOB
            sidecar = mode == JobSubmissionMode.SIDECAR
            view, _, pods = await self._views.cluster(
                ref.namespace,
                params.cluster_name,
                sidecar,
                params.cluster_as_of,
                count_left_pods=params.count_left_pods,
            )
            snap.cluster = view
            snap.submitter = await self._views.submitter(ref.namespace, ref.name, mode, pods)
        return snap

    # --- creates --------------------------------------------------------------------------------

    @activity.defn(name=contract.CREATE_RAYJOB_CLUSTER.name)
    async def create_cluster(self, params: contract.CreateClusterInput) -> contract.CreateResult:
        """Create the attempt's RayCluster from the RayJob's `rayClusterSpec` (J3, J9)."""
        rayjob = await self._rayjob(params.ref, params.as_of)
        if rayjob is None:
            return contract.CreateResult(created=False)
        try:
            manifest = build_rayjob_cluster(
                rayjob,
                params.cluster_name,
                params.job_id,
                params.attempt,
                login_shell=self._options.login_shell,
                batch_scheduler=self._options.batch_scheduler,
            )
        except InvalidJobSpecError as err:
            message = (
                f"Failed to create RayCluster {params.ref.namespace}/{params.cluster_name}: {err}"
            )
            await self._event(
                params.ref,
                EventType.WARNING,
                contract.JobEventReason.FAILED_TO_CREATE_RAY_CLUSTER,
                message,
            )
            raise _refused(err) from None
        # The cluster's own workflow then continues this trace (`activities.kube.spans`).
        stamp_trace_context(manifest)
        ns, name = params.ref.namespace, params.cluster_name
        try:
            await self._pod_group.sync(rayjob)
        except KubeRejected as err:  # Volcano not installed, or no right to its PodGroups
            group = volcano_group_name(rayjob.name, {})
            message = f"Failed to create PodGroup {ns}/{group}: {err}"
            reason = contract.FAILED_TO_CREATE_POD_GROUP
            await self._event(params.ref, EventType.WARNING, reason, message)
            raise
        try:
            stored, created = await self._kube.create_or_get(kube.RAYCLUSTERS, ns, manifest)
        except KubeRejected as err:
            message = f"Failed to create RayCluster {ns}/{name}: {err}"
            await self._event(
                params.ref,
                EventType.WARNING,
                contract.JobEventReason.FAILED_TO_CREATE_RAY_CLUSTER,
                message,
            )
            raise
        if created:
            message = f"Created RayCluster {ns}/{name}"
            await self._event(
                params.ref, EventType.NORMAL, contract.JobEventReason.CREATED_RAY_CLUSTER, message
            )
        return contract.CreateResult(created=created, version=version_of(stored))

    async def _release_pod_group(self, ref: ObjectRef, cluster_name: str | None) -> None:
        if await self._pod_group.release(ref, cluster_name):
            message = f"Cleaned up batch scheduler resources for RayJob {ref.namespace}/{ref.name}"
            reason = contract.JobEventReason.BATCH_SCHEDULER_CLEANED_UP
            await self._event(ref, EventType.NORMAL, reason, message)

    @activity.defn(name=contract.CREATE_SUBMITTER_JOB.name)
    async def create_submitter(
        self, params: contract.CreateSubmitterInput
    ) -> contract.CreateResult:
        """Create the K8sJobMode submitter Job `<rayjob>` for the attempt (J5, J6)."""
        rayjob = await self._rayjob(params.ref, params.as_of)
        ns = params.ref.namespace
        obj = await self._views.cluster_object(ns, params.cluster_name, params.cluster_as_of)
        if rayjob is None or obj is None:
            # The RayJob is gone, or its cluster vanished: the next pass decides what now.
            return contract.CreateResult(created=False)
        cluster = RayCluster.model_validate(obj)
        address, problem = await self._views.dashboard(cluster)
        if address is None:
            # The head Service went, or is no longer one to call, since the pass read it.
            activity.logger.warning("no submitter for %s: %s", params.cluster_name, problem)
            return contract.CreateResult(created=False)
        try:
            job = build_submitter_job(
                rayjob, cluster, params.job_id, address, params.attempt, self._options
            )
        except InvalidJobSpecError as err:
            raise _refused(err) from None
        name = job["metadata"]["name"]
        try:
            _, created = await self._kube.create_or_get(kube.JOBS, ns, job)
        except KubeRejected as err:
            message = f"Failed to create new Kubernetes Job {ns}/{name}: {err}"
            await self._event(
                params.ref,
                EventType.WARNING,
                contract.JobEventReason.FAILED_TO_CREATE_SUBMITTER,
                message,
            )
            raise
        if created:
            message = f"Created Kubernetes Job {ns}/{name}"
            await self._event(
                params.ref, EventType.NORMAL, contract.JobEventReason.CREATED_SUBMITTER, message
            )
        return contract.CreateResult(created=created)

    @activity.defn(name=contract.ENSURE_RAYJOB_HEAD_SERVICE.name)
    async def ensure_head_service(self, params: contract.EnsureHeadServiceInput) -> None:
        """Create `<rayjob>-head-svc`, or re-point it when the cluster changed (J15)."""
        rayjob = await self._rayjob(params.ref, params.as_of)
        ns = params.ref.namespace
        obj = await self._views.cluster_object(ns, params.cluster_name, params.cluster_as_of)
        if rayjob is None or obj is None:
            return
        wanted = build_rayjob_head_service(rayjob, RayCluster.model_validate(obj), self._options)
        name = rayjob_head_service_name(rayjob.name)
        existing, created = await self._kube.create_or_get(kube.SERVICES, ns, wanted)
        if created:
            message = f"Created the service {ns}/{name}"
            await self._event(
                params.ref, EventType.NORMAL, contract.JobEventReason.CREATED_SERVICE, message
            )
            return
        spec = existing.get("spec") or {}
        if (spec.get("selector") or {}).get(LABEL_CLUSTER) == params.cluster_name:
            return
        # Keep the allocated ClusterIP: it is immutable, and clients may have cached it.
        new_spec = dict(wanted["spec"])
        if spec.get("clusterIP"):
            new_spec["clusterIP"] = spec["clusterIP"]
        updated = {**existing, "spec": {**spec, **new_spec}}
        await self._kube.request("PUT", kube.SERVICES.path(ns, name), body=updated)
        message = f"Updated the service {ns}/{name}"
        await self._event(
            params.ref, EventType.NORMAL, contract.JobEventReason.UPDATED_SERVICE, message
        )

    # --- deletes --------------------------------------------------------------------------------

    @activity.defn(name=contract.DELETE_ATTEMPT.name)
    async def delete_attempt(
        self, params: contract.DeleteAttemptInput
    ) -> contract.DeleteAttemptResult:
        """Delete the attempt's RayCluster and/or submitter Job; report what is still there."""
        ref = params.ref
        ns = ref.namespace
        result = contract.DeleteAttemptResult()
        if params.delete_cluster and params.cluster_name:
            obj = await self._views.cluster_object(ns, params.cluster_name, params.cluster_as_of)
            # Only a cluster this RayJob created: never one borrowed through clusterSelector.
            if obj is not None and _controlled_by(obj, ref):
                deleting = bool(obj["metadata"].get("deletionTimestamp"))
                if not deleting and await self._kube.delete(
                    kube.RAYCLUSTERS, ns, params.cluster_name
                ):
                    message = f"Deleted cluster {ns}/{params.cluster_name}"
                    reason = contract.JobEventReason.DELETED_RAY_CLUSTER
                    await self._event(ref, EventType.NORMAL, reason, message)
                result.remaining.append(f"RayCluster/{params.cluster_name}")
            pods = await self._views.cluster_pods(ns, params.cluster_name, params.cluster_as_of)
            result.remaining += [f"Pod/{p['metadata']['name']}" for p in pods]
        if params.delete_submitter:
            name = submitter_job_name(ref.name)
            job = await self._kube.get_or_none(kube.JOBS, ns, name)
            if job is not None and _controlled_by(job, ref):
                if not job["metadata"].get("deletionTimestamp") and await self._kube.delete(
                    kube.JOBS, ns, name
                ):
                    message = f"Deleted submitter K8s Job {ns}/{name}"
                    await self._event(
                        ref, EventType.NORMAL, contract.JobEventReason.DELETED_SUBMITTER, message
                    )
                result.remaining.append(f"Job/{name}")
        if not result.remaining:  # a suspend, a retry or a deletion rule freed everything
            await self._release_pod_group(ref, params.cluster_name)
        return result

    @activity.defn(name=contract.SUSPEND_WORKERS.name)
    async def suspend_workers(self, params: contract.SuspendWorkersInput) -> None:
        """The DeleteWorkers policy: `suspend: true` on every worker group (J17)."""
        ns, name = params.ref.namespace, params.cluster_name
        obj = await self._kube.get_or_none(kube.RAYCLUSTERS, ns, name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        groups = (obj.get("spec") or {}).get("workerGroupSpecs") or []
        if all(group.get("suspend") is True for group in groups):
            return
        for group in groups:
            group["suspend"] = True
        # A PUT with the resourceVersion read: a concurrent writer makes this retry, not lose.
        await self._kube.request("PUT", kube.RAYCLUSTERS.path(ns, name), body=obj)
        message = f"Set the `suspend` field to true for all worker groups in cluster {ns}/{name}"
        await self._event(
            params.ref, EventType.NORMAL, contract.JobEventReason.UPDATED_RAY_CLUSTER, message
        )
        await self._release_pod_group(params.ref, name)

    @activity.defn(name=contract.DELETE_RAYJOB.name)
    async def delete_rayjob(self, params: contract.RayJobRef) -> None:
        """The DeleteSelf policy: delete the RayJob (its children follow by garbage collection)."""
        ref = params.ref
        if await self._own(ref) is not None:
            await self._kube.delete(kube.RAYJOBS, ref.namespace, ref.name)

    # --- writes to the RayJob -------------------------------------------------------------------

    @activity.defn(name=contract.WRITE_RAYJOB_STATUS.name)
    async def write_status(self, params: contract.WriteJobStatusInput) -> contract.Written:
        """Replace the status subresource (fields the new status lacks are removed)."""
        # Every RayJobStatus field is `omitempty` in Go: an empty string is not written (a new
        # job's jobStatus, an interactive job's jobId).
        new = {key: value for key, value in params.status.to_json_dict().items() if value != ""}
        # Go holds the cluster's status by value, so KubeRay writes it before any copy: zeros.
        new.setdefault("rayClusterStatus", RayClusterStatus.zero().to_json_dict())
        ref, version = params.ref, params.read_version
        replaced = await replace_status(self._kube, self._recent, kube.RAYJOBS, ref, version, new)
        if replaced is None:
            return contract.Written()
        deployment = params.status.job_deployment_status
        if deployment is not None and deployment.is_terminal:
            await self._release_pod_group(params.ref, params.status.ray_cluster_name)
        if self._metrics is not None:
            self._metrics.job_status_written(replaced.before, new)
        return contract.Written(version=replaced.version)

    @activity.defn(name=contract.SET_RAYJOB_SUSPEND.name)
    async def set_suspend(self, params: contract.SetJobSuspendInput) -> contract.Written:
        """Write `spec.suspend` (a person's suspend or resume signal)."""
        if await self._own(params.ref) is None:
            return contract.Written()
        return await self._patch(params.ref, {"spec": {"suspend": params.suspend}})

    @activity.defn(name=contract.SET_RAYJOB_FINALIZER.name)
    async def set_finalizer(self, params: contract.SetFinalizerInput) -> contract.Written:
        """Add or remove `ray.io/rayjob-finalizer` (read-modify-write on the resourceVersion).

        A copy behind the server makes the write conflict; the retry reads a newer copy.
        """
        obj = await self._own_as_of(params.ref, params.as_of)
        if obj is None:
            return contract.Written()
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if (FINALIZER_RAYJOB in finalizers) == params.present:
            return contract.Written(version=version_number(self._recent.keep(kube.RAYJOBS, obj)))
        if params.present:
            finalizers.append(FINALIZER_RAYJOB)
        else:
            finalizers.remove(FINALIZER_RAYJOB)
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
        return await self._patch(params.ref, patch)

    # --- helpers --------------------------------------------------------------------------------

    async def _own(self, ref: ObjectRef) -> kube.JSON | None:
        """The RayJob this workflow is for; None if gone or re-created under the same name."""
        return await self._kube.get_same(kube.RAYJOBS, ref.namespace, ref.name, ref.uid)

    async def _own_as_of(self, ref: ObjectRef, as_of: int) -> kube.JSON | None:
        """The RayJob from the worker's copy once it has reached `as_of`, else live."""
        key = (ref.namespace, ref.name)
        return await same_as_of(self._kube, self._rayjobs, kube.RAYJOBS, key, ref.uid, as_of)

    async def _rayjob(self, ref: ObjectRef, as_of: int) -> RayJob | None:
        obj = await self._own_as_of(ref, as_of)
        return None if obj is None else RayJob.model_validate(obj)

    async def _patch(self, ref: ObjectRef, patch: kube.JSON) -> contract.Written:
        """Patch the RayJob's metadata or spec, and keep what the write left.

        The pass's status write names that version (`Applier.set_finalizer`): kept, it is one
        request, not a 409 against the pass's read, a GET and the write again.
        """
        try:
            written = await self._kube.patch(kube.RAYJOBS, ref.namespace, ref.name, patch)
        except KubeNotFound:  # nothing left to write
            return contract.Written()
        return contract.Written(version=version_number(self._recent.keep(kube.RAYJOBS, written)))

    async def _event(self, ref: ObjectRef, kind: EventType, reason: str, message: str) -> None:
        """Record an Event once per activity and message (a retried attempt records none)."""
        info = activity.info()
        key = f"{info.workflow_run_id}/{info.activity_id}/{message}"
        await events.record(self._kube, ref, kind, reason, message, key)


def _controlled_by(obj: kube.JSON, ref: ObjectRef) -> bool:
    owners = obj["metadata"].get("ownerReferences") or []
    return any(o.get("controller") and o.get("uid") == ref.uid for o in owners)


def _refused(err: InvalidJobSpecError) -> ApplicationError:
    """Never retried: the same RayJob builds the same way (the workflow's next read says why)."""
    return ApplicationError(str(err), type=contract.INVALID_SPEC_ERROR, non_retryable=True)
