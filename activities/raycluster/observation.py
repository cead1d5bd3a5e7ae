"""The RayCluster read: one snapshot of the CR, its pods, its Services and what else it owns.

What the workflow decides on, reduced to views (`activities.contract`): the history carries the
spec (secrets redacted) only when its generation changed, and never a pod template. The
RayCluster comes from the worker's copy when it is as new as the workflow knows it (its own
writes, the bridge's news), pods when they are as new as the bridge's news, Services when the
copy holds them; each read is kept (`recent`) for the pass's later steps.

Every pass reads the other owned objects too, so their reads must not grow with the spec: the
NetworkPolicies, one per worker group, come from one LIST by the cluster's label, and a spec
too large to be valid (`crds.validation.sizes`) gets none of these reads at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from datetime import datetime
from typing import TypeVar

from temporalio import activity

from activities import builders
from activities.builders import names
from activities.builders.names import is_controlled_by
from activities.builders.network_policies import stale_policy_names
from activities.builders.redis_cleanup_job import cleanup_job_name
from activities.contract import summarize_pod, summarize_service
from activities.kube import client as kube
from activities.kube import informer
from activities.kube.client import KubeClient
from activities.kube.informer import Informer, cached_or_absent, cached_or_live, same_as_of
from activities.kube.recent import RecentReads, version_number
from activities.kube.vocabulary import JobConditionType
from activities.raycluster import contract
from activities.raycluster.owned_objects import Owned, PodIps, binds_foreign, wanted_objects
from crds.constants import LABEL_CLUSTER
from crds.enums import ConditionStatus, RayNodeType
from crds.loading import parse_ray_object
from crds.raycluster import RayCluster
from crds.redaction import redacted_cluster_spec
from crds.validation.gates import gate_violations
from crds.validation.sizes import oversized
from crds.violations import InvalidObjectError, reported

READ_CONCURRENCY = 8
"""Reads of one cluster's owned objects in flight at once."""
T = TypeVar("T")


async def labelled_policies(client: KubeClient, cluster: RayCluster) -> dict[str, kube.JSON]:
    """The NetworkPolicies labelled with the cluster, by name: one LIST for all its groups."""
    listed = await client.list_all(
        kube.NETWORK_POLICIES, cluster.namespace, f"{LABEL_CLUSTER}={cluster.name}"
    )
    return {p["metadata"]["name"]: p for p in listed}


async def policies_to_check(
    client: KubeClient, cluster: RayCluster, wanted: list[Owned]
) -> dict[str, kube.JSON]:
    """The cluster's labelled NetworkPolicies where some may exist, else none (no LIST).

    Only the option builds them, so they exist where the spec asks for them now or may have
    asked before: a spec never changed (generation 1) without the option has none, and a new
    cluster's first pass, KubeRay's own with its feature gate off, lists nothing.
    """
    if not any(_is_policy(o) for o in wanted) and (cluster.metadata.generation or 0) <= 1:
        return {}
    return await labelled_policies(client, cluster)


def stale_policies(
    cluster: RayCluster, labelled: dict[str, kube.JSON], wanted: list[Owned]
) -> list[str]:
    """NetworkPolicies of this cluster that the spec no longer asks for (removed groups)."""
    desired = [o.manifest for o in wanted if _is_policy(o)]
    return stale_policy_names(cluster, list(labelled.values()), desired)


class ClusterObserver:
    """Reads RayCluster snapshots from one Kubernetes API and the worker's copies."""

    def __init__(
        self,
        client: KubeClient,
        options: builders.BuildOptions,
        pods: Informer | None = None,
        services: Informer | None = None,
        clusters: Informer | None = None,
    ) -> None:
        self._kube = client
        self._options = options
        self._pods = pods
        self._services = services
        self._clusters = clusters
        self.recent = RecentReads()

    @activity.defn(name=contract.READ_CLUSTER.name)
    async def read(self, params: contract.ReadClusterInput) -> contract.ClusterSnapshot:
        """Read the RayCluster, its Ray pods and its Services in one go."""
        ref = params.ref
        key = (ref.namespace, ref.name)
        obj = await same_as_of(
            self._kube, self._clusters, kube.RAYCLUSTERS, key, ref.uid, params.as_of
        )
        if obj is None:
            return contract.ClusterSnapshot(exists=False)
        meta = obj["metadata"]
        snapshot = contract.ClusterSnapshot(
            resource_version=self.recent.keep(kube.RAYCLUSTERS, obj),
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
            snapshot.schema_violations = reported(err.violations)
            return snapshot
        assert isinstance(cluster, RayCluster)
        snapshot.gate_violations = reported(gate_violations(cluster, self._options.feature_gates))
        if params.known_generation != snapshot.generation:
            snapshot.spec = redacted_cluster_spec(cluster.spec)
        if params.known_generation is None:
            snapshot.status = cluster.status
        spec_changed = params.known_generation != snapshot.generation
        first = params.known_generation is None
        await self._observe(cluster, snapshot, spec_changed, params.pods_as_of, first)
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
        first: bool,
    ) -> None:
        """Read the pods and owned objects; `first`: a run's first pass, which made nothing.

        A first pass takes the head Service's absence from a whole copy, as KubeRay's cache
        (a new cluster's first pass made a GET that found nothing); a later one reads live
        what the copy lacks, so one it has not seen yet, or another's of the name (the copy
        holds only labelled ones), is found.
        """
        ns = cluster.namespace
        head_name = names.head_service_name(cluster.name, cluster.spec)
        read_head = cached_or_absent if first else cached_or_live
        # Independent reads go out together: each is a round trip to the API server.
        (pods, snapshot.pods_seen), head = await asyncio.gather(
            self._cluster_pods(cluster, pods_as_of),
            read_head(self._kube, self._services, kube.SERVICES, ns, head_name),
        )
        snapshot.pods = [
            view
            for view in map(summarize_pod, pods)
            if view.node_type in (RayNodeType.HEAD, RayNodeType.WORKER)
        ]
        snapshot.head_service = summarize_service(head) if head else None
        if oversized(cluster.spec):
            return  # validation refuses it before anything is built: nothing more to read
        wanted = wanted_objects(cluster, self._options, PodIps.of(pods))
        await self._missing(cluster, snapshot, wanted, {f"Service/{head_name}": head}, spec_changed)
        snapshot.spec_hash = builders.recreate_hash(cluster.spec)
        snapshot.head_prefix = builders.head_pod_name_prefix(cluster)
        if self._options.deterministic_head_pod_name:
            snapshot.head_name = names.deterministic_head_pod_name(cluster)
        snapshot.worker_prefixes = {
            g.group_name: builders.worker_pod_name_prefix(cluster, g.group_name)
            for g in cluster.spec.worker_group_specs or []
        }
        snapshot.resources = builders.desired_resources(cluster)

    async def _missing(
        self,
        cluster: RayCluster,
        snapshot: contract.ClusterSnapshot,
        wanted: list[Owned],
        known: dict[str, kube.JSON | None],
        spec_changed: bool,
    ) -> None:
        """Note the wanted objects that are missing or to be rewritten, and stale policies."""
        policies = None
        if any(_is_policy(o) for o in wanted):
            policies = await labelled_policies(self._kube, cluster)
            known = {**known, **{f"NetworkPolicy/{n}": p for n, p in policies.items()}}
        found = await self._existing(cluster, [o for o in wanted if o.key not in known])
        found.update(known)
        # Another's Role or ServiceAccount of the name: the RoleBinding is never made (the
        # apply step's Warning says why), so it is not missing either.
        unbound = any(binds_foreign(o, found[o.key], cluster) for o in wanted)
        for owned in wanted:
            current = found[owned.key]
            if unbound and owned.manifest["kind"] == "RoleBinding":
                continue
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
            if policies is None:
                policies = await policies_to_check(self._kube, cluster, wanted)
            stale = stale_policies(cluster, policies, wanted)
            snapshot.missing_objects += [f"NetworkPolicy/{name}" for name in stale]

    async def _existing(
        self, cluster: RayCluster, wanted: list[Owned]
    ) -> dict[str, kube.JSON | None]:
        """Each object as it exists (None: absent), read by name; a Service from the copy.

        What a label LIST lacks is read too: another's object of the name has no label of ours.
        """
        ns = cluster.namespace

        async def read(owned: Owned) -> kube.JSON | None:
            copy = self._services if owned.resource is kube.SERVICES else None
            name = owned.manifest["metadata"]["name"]
            return await cached_or_live(self._kube, copy, owned.resource, ns, name)

        found = await _bounded(read(owned) for owned in wanted)
        return {owned.key: current for owned, current in zip(wanted, found, strict=True)}

    async def _cluster_pods(self, cluster: RayCluster, as_of: int) -> tuple[list[kube.JSON], int]:
        """The cluster's pods and the pod version they reflect.

        From the cache when it is whole and as new as `as_of`, else listed live.
        """
        pods, ns = self._pods, cluster.namespace
        if pods is not None and await pods.reached(ns, as_of, informer.CATCH_UP):
            return pods.labelled(ns, cluster.name), pods.version(ns)
        items, version = await self._kube.list_versioned(
            kube.PODS, ns, f"{LABEL_CLUSTER}={cluster.name}"
        )
        return items, version_number(version)


def _annotations(meta: kube.JSON) -> dict[str, str]:
    return names.without_last_applied(meta.get("annotations"))


def _is_policy(owned: Owned) -> bool:
    return owned.resource is kube.NETWORK_POLICIES


async def _bounded(calls: Iterable[Awaitable[T]]) -> list[T]:
    """Await every call, at most `READ_CONCURRENCY` at a time, and return their results."""
    limit = asyncio.Semaphore(READ_CONCURRENCY)

    async def one(call: Awaitable[T]) -> T:
        async with limit:
            return await call

    return await asyncio.gather(*(one(call) for call in calls))
