"""The RayCluster activities: read a snapshot, apply a pass's plan, write status and spec.

Every method is safe to run twice: pods are created under names the workflow chose (a second
create finds the pod and moves on), deletes tolerate 404, Events have repeatable names, and the
status is replaced as a whole. Manifests are built here from the CR just read, with the pure
builders, so the workflow history carries names and never pod templates.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from temporalio import activity

from activities import builders, events
from activities.builders import names
from activities.builders.network_policies import is_controlled_by, stale_policy_names
from activities.builders.redis_cleanup_job import cleanup_job_name
from activities.builders.tls import is_tls_enabled
from activities.contract import (
    ReplicaFailure,
    summarize_pod,
    summarize_service,
)
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeError, KubeNotFound, KubeRejected
from activities.kube.informer import CATCH_UP, Informer, cached_or_live
from activities.kube.recent import RecentReads, replace_status
from activities.kube.vocabulary import EventType, JobConditionType
from activities.kuberay_metrics import KubeRayMetrics
from activities.raycluster import contract
from activities.raycluster.owned_objects import (
    CREATED_REASONS,
    UPDATED_REASONS,
    Owned,
    PodIps,
    collision,
    created_message,
    updated_message,
    wanted_objects,
)
from crds.constants import HEAD_GROUP_VALUE, LABEL_CLUSTER
from crds.enums import ConditionStatus, RayNodeType
from crds.enums import RayClusterConditionReason as Reason
from crds.loading import parse_ray_object
from crds.raycluster import RayCluster
from crds.redaction import redacted_cluster_spec
from crds.refs import ObjectRef
from crds.violations import InvalidObjectError

CACHE_WAIT = CATCH_UP
"""Seconds a read waits for the pod cache to reach the version the bridge reported."""


class ClusterActivities:
    """RayCluster side effects against one Kubernetes API."""

    def __init__(
        self,
        client: KubeClient,
        options: builders.BuildOptions,
        metrics: KubeRayMetrics | None = None,
        pods: Informer | None = None,
        services: Informer | None = None,
    ) -> None:
        self._kube = client
        self._options = options
        self._metrics = metrics
        self._pods = pods
        self._services = services
        self._recent = RecentReads()

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration."""
        return [self.read, self.apply, self.write_status, self.set_suspend, self.record_event]

    @activity.defn(name=contract.READ_CLUSTER.name)
    async def read(self, params: contract.ReadClusterInput) -> contract.ClusterSnapshot:
        """Read the RayCluster, its Ray pods and its Services in one go."""
        ref = params.ref
        obj = await self._kube.get_same(kube.RAYCLUSTERS, ref.namespace, ref.name, ref.uid)
        if obj is None:
            return contract.ClusterSnapshot(exists=False)
        meta = obj["metadata"]
        snapshot = contract.ClusterSnapshot(
            resource_version=self._recent.keep(kube.RAYCLUSTERS, obj),
            generation=int(meta.get("generation") or 0),
            deleting=bool(meta.get("deletionTimestamp")),
            annotations=_annotations(meta),
            labels=dict(meta.get("labels") or {}),
            finalizers=list(meta.get("finalizers") or []),
            redis_cleanup=self._options.gcs_ft_redis_cleanup,
        )
        try:
            cluster = parse_ray_object(obj)
        except InvalidObjectError as err:
            snapshot.schema_violations = [str(v) for v in err.violations]
            return snapshot
        assert isinstance(cluster, RayCluster)
        if params.known_generation != snapshot.generation:
            snapshot.spec = redacted_cluster_spec(cluster.spec)
        if params.known_generation is None:
            snapshot.status = cluster.status
        spec_changed = params.known_generation != snapshot.generation
        await self._observe(cluster, snapshot, spec_changed, params.pods_as_of)
        if meta.get("deletionTimestamp"):
            await self._observe_deletion(cluster, snapshot)
        return snapshot

    async def _observe_deletion(
        self, cluster: RayCluster, snapshot: contract.ClusterSnapshot
    ) -> None:
        """What the Redis cleanup finalizer needs: the deletion time and the Job.

        Not the namespace: a Job refused because its namespace is being deleted says so
        (`redis_cleanup`), and reading Namespace objects needs a cluster-wide right.
        """
        meta = cluster.metadata
        snapshot.deleted_at = datetime.fromisoformat(str(meta.deletion_timestamp))
        job = await self._kube.get_or_none(
            kube.JOBS, cluster.namespace, cleanup_job_name(cluster.name)
        )
        snapshot.cleanup_job_exists = job is not None
        for condition in ((job or {}).get("status") or {}).get("conditions") or []:
            if (
                condition.get("type") in (JobConditionType.COMPLETE, JobConditionType.FAILED)
                and condition.get("status") == ConditionStatus.TRUE
            ):
                snapshot.cleanup_job_finished = JobConditionType(condition["type"])

    async def _observe(
        self,
        cluster: RayCluster,
        snapshot: contract.ClusterSnapshot,
        spec_changed: bool,
        pods_as_of: int,
    ) -> None:
        ns = cluster.namespace
        head_name = names.head_service_name(cluster.name, cluster.spec)
        # Independent reads go out together: each is a round trip to the API server.
        pods, head = await asyncio.gather(
            self._cluster_pods(cluster, pods_as_of),
            cached_or_live(self._kube, self._services, kube.SERVICES, ns, head_name),
        )
        snapshot.pods = [
            view
            for view in map(summarize_pod, pods)
            if view.node_type in (RayNodeType.HEAD, RayNodeType.WORKER)
        ]
        snapshot.head_service = summarize_service(head) if head else None
        wanted = wanted_objects(cluster, self._options, PodIps.of(pods))

        async def existing(owned: Owned) -> kube.JSON | None:
            name = owned.manifest["metadata"]["name"]
            if owned.manifest["kind"] == "Service" and name == head_name:
                return head
            return await self._kube.get_or_none(owned.resource, ns, name)

        found = await asyncio.gather(*(existing(owned) for owned in wanted))
        for owned, current in zip(wanted, found, strict=True):
            # "Missing" covers objects to rewrite too: the same apply step fixes both. A foreign
            # object of the same name is never rewritten, so it would only cause idle passes.
            if current is None or (
                owned.updated(current) is not None and is_controlled_by(current, cluster)
            ):
                snapshot.missing_objects.append(owned.key)
        # Only a spec change (a group or the option removed) leaves stale policies, and only
        # then do they decide anything: with something missing the apply step runs anyway,
        # and it lists them itself (a first pass lists NetworkPolicies once, not twice).
        if spec_changed and not snapshot.missing_objects:
            stale = await self._stale_policies(cluster, wanted)
            snapshot.missing_objects += [f"NetworkPolicy/{name}" for name in stale]
        snapshot.spec_hash = builders.recreate_hash(cluster.spec)
        snapshot.head_prefix = builders.head_pod_name_prefix(cluster)
        if self._options.deterministic_head_pod_name:
            snapshot.head_name = names.deterministic_head_pod_name(cluster)
        snapshot.worker_prefixes = {
            g.group_name: builders.worker_pod_name_prefix(cluster, g.group_name)
            for g in cluster.spec.worker_group_specs or []
        }
        snapshot.resources = builders.desired_resources(cluster)

    async def _cluster_pods(self, cluster: RayCluster, as_of: int) -> list[kube.JSON]:
        """The cluster's pods: from the cache when it is whole and as new as `as_of`."""
        pods = self._pods
        if pods is not None and await pods.reached(cluster.namespace, as_of, CACHE_WAIT):
            return pods.labelled(cluster.namespace, cluster.name)
        return await self._kube.list_all(
            kube.PODS, cluster.namespace, f"{LABEL_CLUSTER}={cluster.name}"
        )

    @activity.defn(name=contract.APPLY_CLUSTER.name)
    async def apply(self, params: contract.ApplyClusterInput) -> contract.ApplyClusterResult:
        """Create the missing Services, then delete and create pods as planned."""
        cluster = await self._current(params.ref, params.generation, params.read_version)
        if cluster is None:
            return contract.ApplyClusterResult(stale=True)
        result = contract.ApplyClusterResult()
        if params.ensure_objects:
            await self._ensure_objects(cluster)
        steps = (self._delete_all, self._delete_pods, self._create_pods)
        for step in steps:
            if result.failure is None:
                await step(cluster, params, result)
        return result

    async def _current(self, ref: ObjectRef, generation: int, version: str) -> RayCluster | None:
        obj = await self._same(ref, version)
        if obj is None:
            return None
        if int(obj["metadata"].get("generation") or 0) != generation:
            return None
        if obj["metadata"].get("deletionTimestamp"):
            return None
        return RayCluster.model_validate(obj)

    async def _ensure_objects(self, cluster: RayCluster) -> None:
        ns = cluster.namespace
        ips = PodIps()
        if is_tls_enabled(cluster.spec):  # the leaf certificates name the live pod IPs
            ips = PodIps.of(
                await self._kube.list_all(kube.PODS, ns, f"{LABEL_CLUSTER}={cluster.name}")
            )
        wanted = wanted_objects(cluster, self._options, ips)
        # The LIST of policies goes out while the objects are made (one round trip fewer).
        stale = asyncio.ensure_future(self._stale_policies(cluster, wanted))
        try:
            await self._make(cluster, wanted)
        except BaseException:
            stale.cancel()
            raise
        for name in await stale:
            if await self._kube.delete(kube.NETWORK_POLICIES, ns, name):
                message = f"Deleted NetworkPolicy {ns}/{name}"
                await self._event(cluster, EventType.NORMAL, "DeletedNetworkPolicy", message, name)

    async def _make(self, cluster: RayCluster, wanted: list[Owned]) -> None:
        """Create each wanted object, or bring ours back to what it should be."""
        ns = cluster.namespace
        for owned in wanted:
            kind, name = owned.manifest["kind"], owned.manifest["metadata"]["name"]
            if owned.problem:
                message = f"Failed to create {kind} {ns}/{name}: {owned.problem}"
                await self._event(
                    cluster, EventType.WARNING, _failed_reason(kind), message, owned.key
                )
                raise ValueError(message)  # retried, as KubeRay requeues, until the CR changes
            try:
                existing, created = await self._kube.create_or_get(
                    owned.resource, ns, owned.manifest
                )
            except KubeRejected as err:
                # Retrying cannot help until someone fixes the RBAC or the spec, and a retry
                # alone shows nowhere in Kubernetes: say so where `kubectl describe` looks.
                message = f"Failed to create {kind} {ns}/{name}: {err}"
                with contextlib.suppress(KubeError):  # the refusal is what gets reported
                    await self._event(
                        cluster, EventType.WARNING, _failed_reason(kind), message, owned.key
                    )
                raise
            if created:
                if kind in CREATED_REASONS:  # cert-manager objects get none in KubeRay either
                    message = created_message(kind, ns, name)
                    await self._event(
                        cluster, EventType.NORMAL, CREATED_REASONS[kind], message, owned.key
                    )
                continue
            await self._update(cluster, owned, existing)

    async def _update(self, cluster: RayCluster, owned: Owned, existing: kube.JSON) -> None:
        """Rewrite an object KubeRay keeps in line with the spec; never one it does not own."""
        new = owned.updated(existing)
        if new is None:
            return
        kind, name = owned.manifest["kind"], owned.manifest["metadata"]["name"]
        if not is_controlled_by(existing, cluster):
            reason, message = collision(kind, cluster.namespace, name)
            await self._event(cluster, EventType.WARNING, reason, message, owned.key)
            return
        await self._kube.request("PUT", owned.resource.path(cluster.namespace, name), body=new)
        if kind not in UPDATED_REASONS:  # KubeRay records none for a PodGroup
            return
        message = updated_message(kind, cluster.namespace, name, new)
        version = existing["metadata"].get("resourceVersion", "")
        await self._event(
            cluster, EventType.NORMAL, UPDATED_REASONS[kind], message, f"{owned.key}/{version}"
        )

    async def _stale_policies(self, cluster: RayCluster, wanted: list[Owned]) -> list[str]:
        """NetworkPolicies of this cluster that the spec no longer asks for (removed groups)."""
        existing = await self._kube.list_all(
            kube.NETWORK_POLICIES, cluster.namespace, f"{LABEL_CLUSTER}={cluster.name}"
        )
        desired = [o.manifest for o in wanted if o.manifest["kind"] == "NetworkPolicy"]
        return stale_policy_names(cluster, existing, desired)

    async def _delete_all(
        self,
        cluster: RayCluster,
        params: contract.ApplyClusterInput,
        result: contract.ApplyClusterResult,
    ) -> None:
        if not params.delete_all_reason:
            return
        selector = f"{LABEL_CLUSTER}={cluster.name}"
        try:
            await self._kube.delete_collection(kube.PODS, cluster.namespace, selector)
        except KubeRejected as err:
            result.failure = ReplicaFailure.refused(Reason.FAILED_DELETE_ALL_PODS, err.api_message)
            await self._event(
                cluster, EventType.WARNING, "FailedToDeletePodCollection", str(err), "all"
            )
            return
        message = (
            f"Deleted Pods for RayCluster {cluster.namespace}/{cluster.name}: "
            f"{params.delete_all_reason}"
        )
        await self._event(
            cluster, EventType.NORMAL, "DeletedPod", message, f"all/{cluster.metadata.generation}"
        )

    async def _delete_pods(
        self,
        cluster: RayCluster,
        params: contract.ApplyClusterInput,
        result: contract.ApplyClusterResult,
    ) -> None:
        for deletion in params.deletions:
            head = deletion.group == HEAD_GROUP_VALUE
            try:
                existed = await self._kube.delete(kube.PODS, cluster.namespace, deletion.name)
            except KubeRejected as err:
                reason = Reason.FAILED_DELETE_HEAD_POD if head else Reason.FAILED_DELETE_WORKER_POD
                result.failure = ReplicaFailure.refused(reason, err.api_message)
                kind = "FailedToDeleteHeadPod" if head else "FailedToDeleteWorkerPod"
                await self._event(cluster, EventType.WARNING, kind, str(err), deletion.name)
                return
            result.deleted.append(deletion.name)
            if existed:
                kind = "DeletedHeadPod" if head else "DeletedWorkerPod"
                message = f"Deleted pod {cluster.namespace}/{deletion.name}: {deletion.reason}"
                await self._event(cluster, EventType.NORMAL, kind, message, deletion.name)

    async def _create_pods(
        self,
        cluster: RayCluster,
        params: contract.ApplyClusterInput,
        result: contract.ApplyClusterResult,
    ) -> None:
        for creation in params.creations:
            pod = self._build(cluster, creation)
            try:
                _, created = await self._kube.create_or_get(kube.PODS, cluster.namespace, pod)
            except KubeRejected as err:
                head = creation.head
                reason = Reason.FAILED_CREATE_HEAD_POD if head else Reason.FAILED_CREATE_WORKER_POD
                result.failure = ReplicaFailure.refused(reason, err.api_message)
                kind = "FailedToCreateHeadPod" if head else "FailedToCreateWorkerPod"
                role = "head" if head else "worker"
                message = f"Failed to create {role} Pod {cluster.namespace}/{creation.name}: {err}"
                await self._event(cluster, EventType.WARNING, kind, message, creation.name)
                return
            result.created.append(creation.name)
            if created:
                kind = "CreatedHeadPod" if creation.head else "CreatedWorkerPod"
                role = "head" if creation.head else "worker"
                message = f"Created {role} Pod {cluster.namespace}/{creation.name}"
                await self._event(cluster, EventType.NORMAL, kind, message, creation.name)

    def _build(self, cluster: RayCluster, creation: contract.PodCreation) -> kube.JSON:
        if creation.head:
            return builders.build_head_pod(cluster, creation.name, self._options)
        return builders.build_worker_pod(
            cluster,
            creation.group,
            creation.name,
            replica_index=creation.replica_index or 0,
            replica_name=creation.replica_name or "",
            host_index=creation.host_index or 0,
            options=self._options,
        )

    @activity.defn(name=contract.WRITE_CLUSTER_STATUS.name)
    async def write_status(self, params: contract.WriteStatusInput) -> None:
        """Replace the status subresource (fields the new status lacks are removed)."""
        new = params.status.to_json_dict()
        ref, version = params.ref, params.read_version
        current = await replace_status(
            self._kube, self._recent, kube.RAYCLUSTERS, ref, version, new
        )
        if current is not None and self._metrics is not None:
            self._metrics.cluster_status_written(current, new)

    @activity.defn(name=contract.SET_CLUSTER_SUSPEND.name)
    async def set_suspend(self, params: contract.SetSuspendInput) -> None:
        """Write `spec.suspend` (a person's suspend or resume)."""
        await self._patch_ignoring_gone(params.ref, {"spec": {"suspend": params.suspend}})

    @activity.defn(name=contract.RECORD_EVENT.name)
    async def record_event(self, params: contract.RecordEventInput) -> None:
        """Record one Kubernetes Event on a ray.io object."""
        info = activity.info()
        key = f"{info.workflow_run_id}/{info.activity_id}"
        event = params.event
        await events.record(self._kube, params.ref, event.type, event.reason, event.message, key)

    async def _same(self, ref: ObjectRef, version: str) -> kube.JSON | None:
        """The RayCluster as this pass read it (`version`), else as it is now; None if gone."""
        ns, name = ref.namespace, ref.name
        kept = self._recent.recall(kube.RAYCLUSTERS, ns, name, ref.uid, version)
        return kept or await self._kube.get_same(kube.RAYCLUSTERS, ns, name, ref.uid)

    async def _patch_ignoring_gone(self, ref: ObjectRef, patch: kube.JSON, sub: str = "") -> None:
        with contextlib.suppress(KubeNotFound):  # the CR is gone: nothing left to write
            await self._kube.patch(kube.RAYCLUSTERS, ref.namespace, ref.name, patch, sub=sub)

    async def _event(
        self, cluster: RayCluster, kind: EventType, reason: str, message: str, key: str
    ) -> None:
        ref = ObjectRef(
            kind="RayCluster",
            namespace=cluster.namespace,
            name=cluster.name,
            uid=cluster.metadata.uid or "",
        )
        info = activity.info()
        await events.record(self._kube, ref, kind, reason, message, f"{info.workflow_run_id}/{key}")


def _failed_reason(kind: str) -> str:
    """KubeRay's Event reason when creating an object of `kind` fails (`FailedToCreateService`)."""
    created = CREATED_REASONS.get(kind, f"Created{kind}")
    return "FailedToCreate" + created.removeprefix("Created")


def _annotations(meta: kube.JSON) -> dict[str, str]:
    return names.without_last_applied(meta.get("annotations"))
