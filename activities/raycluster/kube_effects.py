"""The RayCluster activities: apply a pass's plan, write status and spec (the read: `observation`).

Every method is safe to run twice: pods are created under names the workflow chose (a second
create finds the pod and moves on), deletes tolerate 404, Events have repeatable names, and the
status is replaced as a whole. Manifests are built here from the CR just read, with the pure
builders, so the workflow history carries names and never pod templates.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, NoReturn

from temporalio import activity

from activities import builders, events
from activities.builders.names import head_service_name, is_controlled_by
from activities.builders.tls import is_tls_enabled
from activities.contract import (
    ReplicaFailure,
    ServiceView,
    Written,
    summarize_pod,
    summarize_service,
)
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeError, KubeRejected
from activities.kube.informer import Informer
from activities.kube.recent import patch_version, replace_status, version_of
from activities.kube.vocabulary import EventType
from activities.kuberay_metrics import KubeRayMetrics
from activities.raycluster import contract
from activities.raycluster.observation import (
    ClusterObserver,
    policies_to_check,
    stale_policies,
)
from activities.raycluster.owned_objects import (
    CREATED_REASONS,
    UPDATED_REASONS,
    Owned,
    PodIps,
    binds_foreign,
    collision,
    created_message,
    updated_message,
    wanted_objects,
)
from crds.constants import HEAD_GROUP_VALUE, LABEL_CLUSTER
from crds.enums import RayClusterConditionReason as Reason
from crds.raycluster import RayCluster
from crds.refs import ObjectRef


class ClusterActivities:
    """RayCluster side effects against one Kubernetes API."""

    def __init__(
        self,
        client: KubeClient,
        options: builders.BuildOptions,
        metrics: KubeRayMetrics | None = None,
        pods: Informer | None = None,
        services: Informer | None = None,
        clusters: Informer | None = None,
    ) -> None:
        self._kube = client
        self._options = options
        self._metrics = metrics
        observer = ClusterObserver(client, options, pods, services, clusters)
        self._recent = observer.recent  # the pass's read, for its later steps
        self.read = observer.read

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration."""
        return [self.read, self.apply, self.write_status, self.set_suspend, self.record_event]

    @activity.defn(name=contract.APPLY_CLUSTER.name)
    async def apply(self, params: contract.ApplyClusterInput) -> contract.ApplyClusterResult:
        """Create the missing Services, then delete and create pods as planned."""
        cluster = await self._current(params.ref, params.generation, params.read_version)
        if cluster is None:
            return contract.ApplyClusterResult(stale=True)
        result = contract.ApplyClusterResult()
        if params.ensure_objects:
            result.head_service = await self._ensure_objects(cluster)
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

    async def _ensure_objects(self, cluster: RayCluster) -> ServiceView | None:
        """Make what is missing; returns the head Service, when this cluster's."""
        ns = cluster.namespace
        ips = PodIps()
        if is_tls_enabled(cluster.spec):  # the leaf certificates name the live pod IPs
            ips = PodIps.of(
                await self._kube.list_all(kube.PODS, ns, f"{LABEL_CLUSTER}={cluster.name}")
            )
        wanted = wanted_objects(cluster, self._options, ips)
        # The LIST of policies goes out while the objects before them are made (one round trip
        # fewer); the policies it finds need no create.
        policies = asyncio.ensure_future(policies_to_check(self._kube, cluster, wanted))
        made: dict[str, kube.JSON] = {}
        try:
            await self._make(cluster, wanted, policies, made)
        except BaseException:
            policies.cancel()
            raise
        for name in stale_policies(cluster, await policies, wanted):
            if await self._kube.delete(kube.NETWORK_POLICIES, ns, name):
                message = f"Deleted NetworkPolicy {ns}/{name}"
                await self._event(cluster, EventType.NORMAL, "DeletedNetworkPolicy", message, name)
        head = made.get(f"Service/{head_service_name(cluster.name, cluster.spec)}")
        return summarize_service(head) if head and is_controlled_by(head, cluster) else None

    async def _make(
        self,
        cluster: RayCluster,
        wanted: list[Owned],
        policies: asyncio.Future[dict[str, kube.JSON]],
        made: dict[str, kube.JSON],
    ) -> None:
        """Create each wanted object, or bring ours back to what it should be.

        `made` gets each object (by `Kind/name`) as created or found. The RoleBinding only
        while the ServiceAccount and Role before it are this cluster's
        (`binds_foreign`): else a Warning says why, and nothing is bound.
        """
        unbound = False
        for owned in wanted:
            if owned.problem:
                await self._refuse(cluster, owned)
            if unbound and owned.manifest["kind"] == "RoleBinding":
                continue
            existing = await self._existing_or_created(cluster, owned, policies, made)
            if binds_foreign(owned, existing, cluster):
                unbound = True
                await self._collision(cluster, owned)
            elif existing is not None:
                await self._update(cluster, owned, existing)

    async def _refuse(self, cluster: RayCluster, owned: Owned) -> NoReturn:
        """Say why an object cannot be made as the CR stands, and fail the apply."""
        kind, name = owned.manifest["kind"], owned.manifest["metadata"]["name"]
        message = f"Failed to create {kind} {cluster.namespace}/{name}: {owned.problem}"
        await self._event(cluster, EventType.WARNING, _failed_reason(kind), message, owned.key)
        raise ValueError(message)  # retried, as KubeRay requeues, until the CR changes

    async def _existing_or_created(
        self,
        cluster: RayCluster,
        owned: Owned,
        policies: asyncio.Future[dict[str, kube.JSON]],
        made: dict[str, kube.JSON],
    ) -> kube.JSON | None:
        """The object as it exists, or None once this call has created it."""
        ns = cluster.namespace
        kind, name = owned.manifest["kind"], owned.manifest["metadata"]["name"]
        if owned.resource is kube.NETWORK_POLICIES and name in await policies:
            return (await policies)[name]
        try:
            existing, created = await self._kube.create_or_get(owned.resource, ns, owned.manifest)
        except KubeRejected as err:
            # Retrying cannot help until someone fixes the RBAC or the spec, and a retry
            # alone shows nowhere in Kubernetes: say so where `kubectl describe` looks.
            message = f"Failed to create {kind} {ns}/{name}: {err}"
            with contextlib.suppress(KubeError):  # the refusal is what gets reported
                await self._event(
                    cluster, EventType.WARNING, _failed_reason(kind), message, owned.key
                )
            raise
        made[owned.key] = existing
        if not created:
            return existing
        if kind in CREATED_REASONS:  # cert-manager objects get none in KubeRay either
            message = created_message(kind, ns, name)
            await self._event(cluster, EventType.NORMAL, CREATED_REASONS[kind], message, owned.key)
        return None

    async def _collision(self, cluster: RayCluster, owned: Owned) -> None:
        """Warn of an object of the wanted name that another owns (it is left alone)."""
        kind, name = owned.manifest["kind"], owned.manifest["metadata"]["name"]
        reason, message = collision(kind, cluster.namespace, name)
        await self._event(cluster, EventType.WARNING, reason, message, owned.key)

    async def _update(self, cluster: RayCluster, owned: Owned, existing: kube.JSON) -> None:
        """Rewrite an object KubeRay keeps in line with the spec; never one it does not own."""
        new = owned.updated(existing)
        if new is None:
            return
        kind, name = owned.manifest["kind"], owned.manifest["metadata"]["name"]
        if not is_controlled_by(existing, cluster):
            await self._collision(cluster, owned)
            return
        await self._kube.request("PUT", owned.resource.path(cluster.namespace, name), body=new)
        if kind not in UPDATED_REASONS:  # KubeRay records none for a PodGroup
            return
        message = updated_message(kind, cluster.namespace, name, new)
        version = existing["metadata"].get("resourceVersion", "")
        await self._event(
            cluster, EventType.NORMAL, UPDATED_REASONS[kind], message, f"{owned.key}/{version}"
        )

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
                stored, created = await self._kube.create_or_get(kube.PODS, cluster.namespace, pod)
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
            result.created_pods.append(summarize_pod(stored))
            result.pods_version = max(result.pods_version, version_of(stored))
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
    async def write_status(self, params: contract.WriteStatusInput) -> Written:
        """Replace the status subresource (fields the new status lacks are removed)."""
        new = params.status.to_json_dict()
        ref, version = params.ref, params.read_version
        replaced = await replace_status(
            self._kube, self._recent, kube.RAYCLUSTERS, ref, version, new
        )
        if replaced is None:
            return Written()
        if self._metrics is not None:
            self._metrics.cluster_status_written(replaced.before, new)
        return Written(version=replaced.version)

    @activity.defn(name=contract.SET_CLUSTER_SUSPEND.name)
    async def set_suspend(self, params: contract.SetSuspendInput) -> Written:
        """Write `spec.suspend` (a person's suspend or resume)."""
        patch = {"spec": {"suspend": params.suspend}}
        return Written(version=await patch_version(self._kube, kube.RAYCLUSTERS, params.ref, patch))

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
