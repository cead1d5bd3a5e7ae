"""A RayJob's Volcano PodGroup: made before its cluster, shrunk once the job no longer needs it.

Volcano gangs a RayJob's cluster and submitter in one PodGroup of the RayJob's
(`activities.builders.pod_groups`). Made, or brought back to the spec, before each attempt's
cluster; once the job is finished, suspended or retried, shrunk to what still runs, so its
queue's capacity goes to other work (KubeRay v1.7 `CleanupOnCompletion`). Nothing here for
another scheduler, nor for a PodGroup this RayJob does not control.
"""

from __future__ import annotations

from activities.builders import batch_scheduling, pod_groups
from activities.builders.rayservice import is_owned_by
from activities.kube import client as kube
from activities.kube.client import KubeClient
from crds.raycluster import RayCluster
from crds.rayjob import RayJob
from crds.refs import ObjectRef


class JobPodGroup:
    """The PodGroup calls of the RayJob activities, against one Kubernetes API."""

    def __init__(self, client: KubeClient, scheduler: str) -> None:
        self._kube = client
        self._scheduler = scheduler

    async def sync(self, rayjob: RayJob) -> None:
        """Create the PodGroup, or bring its members and resources back to the spec.

        Raises:
            KubeRejected: the API server refused it (Volcano not installed, no right).
        """
        group = pod_groups.rayjob_pod_group(self._scheduler, rayjob)
        if group is None:
            return
        ns, name = rayjob.namespace, group["metadata"]["name"]
        existing, created = await self._kube.create_or_get(kube.VOLCANO_POD_GROUPS, ns, group)
        if created or not pod_groups.needs_update(existing, group):
            return
        if is_owned_by(existing, rayjob.metadata.uid or ""):  # never someone else's
            body = pod_groups.updated(existing, group)
            await self._kube.request("PUT", kube.VOLCANO_POD_GROUPS.path(ns, name), body=body)

    async def release(self, ref: ObjectRef, cluster_name: str | None) -> bool:
        """Shrink the PodGroup to what the cluster still runs; whether it changed.

        Nothing runs once the cluster is gone or going.
        """
        if self._scheduler != batch_scheduling.VOLCANO or not cluster_name:
            return False
        ns, name = ref.namespace, batch_scheduling.volcano_group_name(ref.name, {})
        group = await self._kube.get_or_none(kube.VOLCANO_POD_GROUPS, ns, name)
        if group is None or not is_owned_by(group, ref.uid):
            return False
        obj = await self._kube.get_or_none(kube.RAYCLUSTERS, ns, cluster_name)
        wanted = pod_groups.released(RayCluster.model_validate(obj) if obj else None)
        if not pod_groups.needs_update(group, wanted):
            return False
        body = pod_groups.updated(group, wanted)
        await self._kube.request("PUT", kube.VOLCANO_POD_GROUPS.path(ns, name), body=body)
        return True
