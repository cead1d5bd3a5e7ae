"""What the RayJob workflow sees of its RayCluster and its submitter, read from Kubernetes.

The workflow decides on small views (`ClusterView`, `SubmitterView`), not on manifests: this
module reads the objects KubeRay's RayJob controller reads (the RayCluster, its head Service
and pods, the submitter Job or the head's `ray-job-submitter` container) and reduces them to
the facts the state machine uses, so the history stays small and holds no pod templates.
"""

from __future__ import annotations

from datetime import datetime

from activities.builders.rayjob import submitter_job_name
from activities.dashboard.heads import HeadServiceRefused, head_of, head_service_name
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.informer import Informer, cached_or_live
from activities.kube.vocabulary import JobConditionType as Finished
from activities.rayjob.contract import ClusterView, SubmitterView
from crds.constants import (
    LABEL_CLUSTER,
    LABEL_NODE_TYPE,
    SUBMITTER_CONTAINER_NAME,
)
from crds.enums import ConditionStatus, JobSubmissionMode, RayNodeType
from crds.raycluster import RayCluster, RayClusterStatus
from crds.violations import InvalidObjectError

Mode = JobSubmissionMode
_TRUE = ConditionStatus.TRUE


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def job_submitter_view(job: kube.JSON | None) -> SubmitterView | None:
    """The K8sJobMode submitter: finished once Complete or Failed (`getJobFinishedCondition`)."""
    if job is None:
        return None
    view = SubmitterView(deleting=bool(job["metadata"].get("deletionTimestamp")))
    for condition in (job.get("status") or {}).get("conditions") or []:
        kind = condition.get("type")
        if kind not in (Finished.COMPLETE, Finished.FAILED) or condition.get("status") != _TRUE:
            continue
        view.finished_at = _time(condition.get("lastTransitionTime"))
        if kind == Finished.FAILED:
            view.failed = True
            view.reason = str(condition.get("reason") or "")
            view.message = str(condition.get("message") or "")
    return view


def sidecar_submitter_view(head: kube.JSON | None) -> SubmitterView | None:
    """SidecarMode: the head's `ray-job-submitter` container, once it has terminated."""
    if head is None:
        return None
    for status in (head.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") != SUBMITTER_CONTAINER_NAME:
            continue
        terminated = (status.get("state") or {}).get("terminated")
        if not terminated:
            return None
        code = int(terminated.get("exitCode") or 0)
        reason = str(terminated.get("reason") or "")
        return SubmitterView(
            finished_at=_time(terminated.get("finishedAt")),
            failed=code != 0,
            reason=reason,
            message=(
                f"Ray head pod container {SUBMITTER_CONTAINER_NAME} terminated with exit code "
                f"{code}: {reason}"
            ),
        )
    return None


class JobViews:
    """Reads the views for one RayJob pass."""

    def __init__(
        self,
        client: KubeClient,
        cluster_domain: str,
        services: Informer | None = None,
        clusters: Informer | None = None,
        pods: Informer | None = None,
    ) -> None:
        self._kube = client
        self._domain = cluster_domain
        self._services = services
        self._clusters = clusters
        self._pods = pods

    async def cluster(
        self,
        namespace: str,
        name: str,
        sidecar: bool,
        as_of: int,
        *,
        count_left_pods: bool,
    ) -> tuple[ClusterView, RayCluster | None, list[kube.JSON]]:
        """The cluster's view, its model (None when missing or unreadable) and its pods.

        The pods are listed only where they decide something: once the cluster is gone, when
        `count_left_pods` (a teardown ends with its last pod), and in SidecarMode (the head pod
        and its submitter container); otherwise the view counts none and the list is empty. A
        pass of an HTTPMode RayJob saved a LIST of pods this way, every pass, and a finished
        one whose cluster a deletion rule removed, a LIST every pass until the pods went.

        What comes from the worker's copies and when: `cluster_object`, `cluster_pods`.
        """
        obj = await self.cluster_object(namespace, name, as_of)
        if obj is None:
            left = await self.cluster_pods(namespace, name, as_of) if count_left_pods else []
            return ClusterView(name=name, exists=False, pods=len(left)), None, left
        pods: list[kube.JSON] = []
        if sidecar:  # the submitter container's state: the whole pod, as it is now
            pods = await self._kube.list_all(kube.PODS, namespace, f"{LABEL_CLUSTER}={name}")
        heads = [
            p
            for p in pods
            if (p["metadata"].get("labels") or {}).get(LABEL_NODE_TYPE) == RayNodeType.HEAD
        ]
        view = ClusterView(
            name=name,
            deleting=bool(obj["metadata"].get("deletionTimestamp")),
            head_pod=bool(heads),
            pods=len(pods),
        )
        try:
            cluster = RayCluster.model_validate(obj)
        except (InvalidObjectError, ValueError):
            # Still a cluster to wait for or delete; just not one to read a status from.
            view.status = RayClusterStatus.model_validate(obj.get("status") or {})
            return view, None, pods
        view.status = cluster.status
        groups = cluster.spec.worker_group_specs or []
        view.workers_suspended = all(bool(group.suspend) for group in groups)
        view.dashboard_url, view.head_service_problem = await self.dashboard(cluster)
        return view, cluster, pods

    async def dashboard(self, cluster: RayCluster) -> tuple[str | None, str]:
        """The address of the cluster's dashboard, or why it has none (empty: not yet).

        Derived from the head Service the cluster owns (`activities.dashboard.heads`), from
        the worker's copy when it holds it: what the workflow writes to `status.dashboardURL`
        and what a K8sJobMode submitter submits to.
        """
        service = await cached_or_live(
            self._kube, self._services, kube.SERVICES, cluster.namespace, head_service_name(cluster)
        )
        if service is None:
            return None, ""
        try:
            return head_of(service, cluster).address(self._domain), ""
        except HeadServiceRefused as err:
            return None, str(err)

    async def cluster_object(self, namespace: str, name: str, as_of: int) -> kube.JSON | None:
        """The RayCluster; None when it does not exist.

        From the worker's copy once the copy has reached `as_of`, the newest version of the
        cluster the workflow knows (its create, the bridge's news): the cluster existed then,
        so a copy that has seen that version and lacks it has seen it go. Else live.
        """
        copy = self._clusters
        if copy is not None and await copy.seen(namespace, as_of):
            return copy.get(namespace, name)
        return await self._kube.get_or_none(kube.RAYCLUSTERS, namespace, name)

    async def cluster_pods(self, namespace: str, name: str, as_of: int) -> list[kube.JSON]:
        """The pods still labelled with the cluster (its teardown waits for none).

        From the worker's pod copy once it has reached `as_of` (as `cluster_object`), as
        KubeRay counts them from its informer's cache; else listed.
        """
        copy = self._pods
        if copy is not None and await copy.seen(namespace, as_of):
            return copy.labelled(namespace, name)
        return await self._kube.list_all(kube.PODS, namespace, f"{LABEL_CLUSTER}={name}")

    async def submitter(
        self, namespace: str, rayjob_name: str, mode: JobSubmissionMode, pods: list[kube.JSON]
    ) -> SubmitterView | None:
        """The submitter of the mode (None in HTTP and Interactive modes, or before it exists)."""
        if mode == Mode.K8S_JOB:
            job = await self._kube.get_or_none(
                kube.JOBS, namespace, submitter_job_name(rayjob_name)
            )
            return job_submitter_view(job)
        if mode == Mode.SIDECAR:
            heads = [
                p
                for p in pods
                if (p["metadata"].get("labels") or {}).get(LABEL_NODE_TYPE) == RayNodeType.HEAD
                and not p["metadata"].get("deletionTimestamp")
            ]
            return sidecar_submitter_view(heads[0] if heads else None)
        return None
