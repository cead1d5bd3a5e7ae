"""Mixed CR lifecycles driven through the Kubernetes API, each checked to its expected end.

A lifecycle applies one CR, waits for its outcome, checks it (and, for RayJobs, that the head
knows exactly one Ray job, the one the status names), deletes the CR and waits until it and
everything it owned are gone. The kinds rotate through `MIX`. The suite's own calls meet the
same faults as the operator's, so they are retried (`Calls`); CR states are read from one
shared listing (`Observed`) rather than polled per lifecycle, so hundreds of lifecycles cost
the API server a few lists a second.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml

from activities.kube import client as kube
from activities.kube.client import KubeClient, Resource
from activities.kube.errors import KubeUnavailable
from tests.eventually import eventually
from tests.reference import REPO_ROOT

T = TypeVar("T")
JSON = dict[str, Any]
NAMESPACE = "faults"
MIX = ("raycluster", "rayjob-http", "rayjob-k8s", "rayjob-failing", "rayservice")
KINDS = {
    "raycluster": kube.RAYCLUSTERS,
    "rayjob": kube.RAYJOBS,
    "rayservice": kube.RAYSERVICES,
}
OWNED: tuple[Resource, ...] = (kube.PODS, kube.SERVICES, kube.JOBS)
WATCHED = (*KINDS.values(), *OWNED)


@dataclass(frozen=True)
class Outcome:
    """How one lifecycle went: its kind, CR name, end state and seconds from apply to gone."""

    kind: str
    name: str
    state: str
    seconds: float


def _head_only(cluster_spec: JSON) -> JSON:
    spec = copy.deepcopy(cluster_spec)
    spec.pop("workerGroupSpecs", None)
    return spec


def _sample(file: str) -> JSON:
    docs = [d for d in yaml.safe_load_all((REPO_ROOT / "samples" / file).read_text()) if d]
    return dict(docs[-1])


def manifest(kind: str, index: int) -> JSON:
    """The CR of lifecycle `index` of `kind` (one of `MIX`)."""
    name = f"{kind}-{index}"
    meta = {"name": name, "namespace": NAMESPACE}
    if kind == "raycluster":
        doc = _sample("raycluster.yaml")
        return {**doc, "metadata": meta}
    if kind == "rayservice":
        doc = _sample("rayservice.yaml")
        # The sample's application comes from a ConfigMap; simulated Ray needs no code.
        pod = doc["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
        pod.pop("volumes", None)
        for container in pod["containers"]:
            container.pop("volumeMounts", None)
        return {**doc, "metadata": meta}
    file = "rayjob.k8s-job-mode.yaml" if kind == "rayjob-k8s" else "rayjob.http-mode.yaml"
    doc = _sample(file)
    spec = doc["spec"]
    spec["rayClusterSpec"] = _head_only(spec["rayClusterSpec"])
    # The cluster stays until the RayJob is deleted, so its head can be asked what it ran.
    spec.update(shutdownAfterJobFinishes=False, entrypoint="echo simulated; sleep 2")
    spec.pop("ttlSecondsAfterFinished", None)
    if kind == "rayjob-failing":
        spec.update(entrypoint="sleep 1; exit 1", backoffLimit=0)
    return {**doc, "metadata": meta}


class Calls:
    """The suite's own API calls, retried through injected 500s, 429s and dropped answers."""

    def __init__(self, client: KubeClient, attempts: int = 60) -> None:
        self.client = client
        self._attempts = attempts

    async def __call__(self, call: Callable[[], Awaitable[T]]) -> T:
        """Run `call`, again after a short pause while the server says it is unavailable."""
        for _ in range(self._attempts - 1):
            try:
                return await call()
            except KubeUnavailable:
                await asyncio.sleep(0.2)  # a retry back-off, not a wait for a condition
        return await call()


class Observed:
    """One listing of the namespace's CRs and owned objects, refreshed every second.

    Every lifecycle waits on it (with `eventually`) instead of polling the API server itself.
    """

    def __init__(self, calls: Calls) -> None:
        self._calls = calls
        self.objects: dict[str, list[JSON]] = {}

    async def run(self) -> None:
        """Refresh until cancelled."""
        while True:
            fresh: dict[str, list[JSON]] = {}
            for resource in WATCHED:
                fresh[resource.plural] = await self._calls(
                    lambda r=resource: self._calls.client.list_all(r, NAMESPACE)  # type: ignore[misc]
                )
            self.objects = fresh
            await asyncio.sleep(1.0)  # the poll period of the one shared poller

    def find(self, resource: Resource, name: str) -> JSON | None:
        """The object last seen under that name."""
        items = self.objects.get(resource.plural, [])
        return next((i for i in items if i["metadata"]["name"] == name), None)

    def status(self, resource: Resource, name: str) -> JSON:
        """The last seen status of a CR, empty if unseen."""
        return dict((self.find(resource, name) or {}).get("status") or {})

    def left(self, cluster: str) -> list[str]:
        """The cluster itself, and what still carries its `ray.io/cluster` label."""
        out = [f"rayclusters/{cluster}"] if self.find(kube.RAYCLUSTERS, cluster) else []
        for resource in OWNED:
            out += [
                f"{resource.plural}/{i['metadata']['name']}"
                for i in self.objects.get(resource.plural, [])
                if (i["metadata"].get("labels") or {}).get("ray.io/cluster") == cluster
            ]
        return out

    def everything(self) -> list[str]:
        """Every object left in the namespace but the API server's own."""
        return [
            f"{plural}/{i['metadata']['name']}"
            for plural, items in self.objects.items()
            for i in items
            if not (plural == "services" and i["metadata"]["name"] == "kubernetes")
        ]


def reached(kind: str, status: JSON) -> str | None:
    """The end state a lifecycle of `kind` waits for, once `status` shows it; else None."""
    if kind == "raycluster":
        return "ready" if status.get("state") == "ready" else None
    if kind == "rayservice":
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        apps = (status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}
        running = (apps.get("hello") or {}).get("status") == "RUNNING"
        return "Ready" if conditions.get("Ready") == "True" and running else None
    state = status.get("jobDeploymentStatus")
    return str(state) if state in ("Complete", "Failed") else None


def expected(kind: str) -> str:
    """The end state a fault-free run reaches for `kind`."""
    return {"raycluster": "ready", "rayservice": "Ready", "rayjob-failing": "Failed"}.get(
        kind, "Complete"
    )


def check_job(kind: str, status: JSON, ray_jobs: list[str]) -> None:
    """A finished RayJob's status is the expected one, and Ray ran its job exactly once."""
    failing = kind == "rayjob-failing"
    assert status.get("jobStatus") == ("FAILED" if failing else "SUCCEEDED"), status
    assert status.get("succeeded", 0) == (0 if failing else 1), status
    assert status.get("failed", 0) == (1 if failing else 0), status
    assert ray_jobs == [status.get("jobId")], (ray_jobs, status)


async def ray_jobs(calls: Calls, cluster: str) -> list[str]:
    """The submission ids the cluster's head knows, asked through the API server's proxy."""
    path = f"/api/v1/namespaces/{NAMESPACE}/services/{cluster}-head-svc:dashboard/proxy/api/jobs/"
    answer = await calls(lambda: calls.client.request("GET", path))
    return sorted(str(job["submission_id"]) for job in answer["value"])


async def run_lifecycle(
    calls: Calls, observed: Observed, kind: str, index: int, within: float
) -> Outcome:
    """Apply, wait for the end state, check it, delete, and wait until nothing is left."""
    began = time.monotonic()
    doc = manifest(kind, index)
    name, short = doc["metadata"]["name"], kind.split("-")[0]
    resource = KINDS[short]
    await calls(lambda: calls.client.create_or_get(resource, NAMESPACE, doc))
    state = await eventually(
        lambda: reached(kind, observed.status(resource, name)),
        within=within,
        message=f"{kind} {name} to end",
    )
    status = observed.status(resource, name)
    cluster = str(
        name
        if short == "raycluster"
        else status.get("rayClusterName")
        or (status.get("activeServiceStatus") or {}).get("rayClusterName")
    )
    if short == "rayjob":
        check_job(kind, status, await ray_jobs(calls, cluster))
    await calls(lambda: calls.client.delete(resource, NAMESPACE, name))

    def gone() -> bool:  # the CR was listed until now: no listing from before the delete passes
        return observed.find(resource, name) is None and not observed.left(cluster)

    await eventually(gone, within=within, message=f"{kind} {name} and what it owned gone")
    return Outcome(kind, name, state, time.monotonic() - began)
