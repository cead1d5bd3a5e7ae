"""The chaos suite's CR lifecycles: each drives one CR from apply to deletion and checks it.

Kinds, dealt by a seeded generator: a RayCluster that is scaled up and deleted; RayJobs that
succeed (HTTPMode, K8sJobMode), fail through `backoffLimit: 1`, or are deleted while Ray runs
them; a RayService whose Serve config is updated in place. Every API call is retried until
its deadline, since devcluster may be down at any moment; a lifecycle that misses a deadline
or sees a wrong state records a failure instead of raising, so one run reports all of them.
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml

from activities.kube import client as kube
from tests.reference import REPO_ROOT

T = TypeVar("T")
NAMESPACE = "default"
KINDS = ("cluster", "http", "k8s", "fail", "del", "svc")
ATTEMPTS = {"http": 1, "k8s": 1, "fail": 2, "del": 1}
"""Ray jobs each RayJob kind must create: one per attempt, each exactly once."""
SERVE_APP_CONFIGMAP = "rayservice-hello-app"


class LifecycleFailed(Exception):
    """A lifecycle saw a wrong state or missed a deadline."""


@dataclass
class Outcome:
    """What one lifecycle ended with."""

    name: str
    kind: str
    failure: str | None = None


def deal(seed: int, count: int) -> list[tuple[str, str]]:
    """`count` (name, kind) pairs, every kind about equally often, in a seeded order."""
    kinds = [KINDS[i % len(KINDS)] for i in range(count)]
    random.Random(seed).shuffle(kinds)
    return [(f"c{i:03d}-{kind}", kind) for i, kind in enumerate(kinds)]


async def until(
    probe: Callable[[], Awaitable[T | None]], within: float, message: str, every: float = 1.0
) -> T:
    """Call `probe` until it returns something truthy; errors (API down) count as not yet."""
    deadline = time.monotonic() + within
    last: object = None
    while True:
        try:
            result = await probe()
        except Exception as err:  # devcluster restarting, a 5xx, a refused connection
            result, last = None, err
        else:
            last = result
        if result:
            return result
        if time.monotonic() > deadline:
            raise LifecycleFailed(f"no {message} within {within:.0f}s (last: {last!r:.300})")
        await asyncio.sleep(every)  # polling interval, bounded by the deadline above


class Driver:
    """Runs lifecycles against one API server."""

    def __init__(self, client: kube.KubeClient, within: float) -> None:
        self.client = client
        self.within = within

    async def run(self, name: str, kind: str) -> Outcome:
        """Drive one lifecycle to its end; a failure is recorded, not raised."""
        steps = {
            "cluster": self._cluster,
            "http": self._job_succeeds,
            "k8s": self._job_succeeds,
            "fail": self._job_fails,
            "del": self._job_deleted,
            "svc": self._service,
        }
        try:
            await steps[kind](name, kind)
        except LifecycleFailed as err:
            return Outcome(name, kind, str(err))
        except Exception as err:  # a surprise in a CR's status: reported, not fatal to the run
            return Outcome(name, kind, f"{type(err).__name__}: {err}")
        return Outcome(name, kind)

    # --- API calls that outlive an API server restart ----------------------------------

    async def _call(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        async def attempt() -> tuple[T] | None:
            return (await call(),)

        (result,) = await until(attempt, self.within, what)
        return result

    async def _create(self, resource: kube.Resource, doc: dict[str, Any]) -> None:
        await self._call(
            f"create {doc['metadata']['name']}",
            lambda: self.client.create_or_get(resource, NAMESPACE, doc),
        )

    async def _get(self, resource: kube.Resource, name: str) -> dict[str, Any]:
        found = await self._call(
            f"get {name}", lambda: self.client.get_or_none(resource, NAMESPACE, name)
        )
        if found is None:
            raise LifecycleFailed(f"{name} disappeared")
        return found

    async def _delete_and_wait(self, resource: kube.Resource, name: str) -> None:
        await self._call(f"delete {name}", lambda: self.client.delete(resource, NAMESPACE, name))

        async def gone() -> bool:
            return await self.client.get_or_none(resource, NAMESPACE, name) is None

        await until(gone, self.within, f"{name} deleted (finalizer released)")

    async def _status(self, resource: kube.Resource, name: str, wanted: Callable[..., bool]) -> Any:
        last: list[Any] = [None]

        async def probe() -> dict[str, Any] | None:
            found = await self.client.get_or_none(resource, NAMESPACE, name)
            status = last[0] = (found or {}).get("status") or {}
            return found if found and wanted(found, status) else None

        try:
            return await until(probe, self.within, f"{name} in the wanted state")
        except LifecycleFailed as err:
            raise LifecycleFailed(f"{err}; last status {last[0]!r:.1500}") from None

    # --- lifecycles -----------------------------------------------------------------------

    async def _cluster(self, name: str, _: str) -> None:
        doc = _sample("raycluster.yaml", name)
        await self._create(kube.RAYCLUSTERS, doc)
        await self._status(kube.RAYCLUSTERS, name, lambda _, s: s.get("state") == "ready")
        groups = copy.deepcopy(doc["spec"]["workerGroupSpecs"])
        groups[0]["replicas"] = 2
        patch = {"spec": {"workerGroupSpecs": groups}}
        await self._call(
            f"scale {name}",
            lambda: self.client.patch(kube.RAYCLUSTERS, NAMESPACE, name, patch),
        )

        def scaled(_: Any, status: dict[str, Any]) -> bool:
            return bool(
                status.get("state") == "ready"
                and status.get("desiredWorkerReplicas") == 2
                and status.get("readyWorkerReplicas") == 2
            )

        await self._status(kube.RAYCLUSTERS, name, scaled)
        await self._delete_and_wait(kube.RAYCLUSTERS, name)

    async def _job(self, name: str, kind: str, **spec: Any) -> dict[str, Any]:
        file = "rayjob.k8s-job-mode.yaml" if kind == "k8s" else "rayjob.http-mode.yaml"
        doc = _sample(file, name)
        doc["spec"]["rayClusterSpec"].pop("workerGroupSpecs", None)
        doc["spec"].update(spec)
        await self._create(kube.RAYJOBS, doc)
        return doc

    async def _finished(self, name: str) -> dict[str, Any]:
        done = await self._status(
            kube.RAYJOBS,
            name,
            lambda _, s: s.get("jobDeploymentStatus") in ("Complete", "Failed"),
        )
        status: dict[str, Any] = done["status"]
        cluster = status.get("rayClusterName")

        async def cluster_gone() -> bool:  # shutdownAfterJobFinishes
            return not cluster or (
                await self.client.get_or_none(kube.RAYCLUSTERS, NAMESPACE, cluster) is None
            )

        await until(cluster_gone, self.within, f"{name}'s cluster deleted")
        return status

    async def _job_succeeds(self, name: str, kind: str) -> None:
        await self._job(
            name,
            kind,
            entrypoint="sleep 2",
            shutdownAfterJobFinishes=True,
            ttlSecondsAfterFinished=0,
        )
        status = await self._finished(name)
        got = (status.get("jobDeploymentStatus"), status.get("jobStatus"))
        counts = (status.get("succeeded"), status.get("failed", 0))
        if got != ("Complete", "SUCCEEDED") or counts != (1, 0):
            raise LifecycleFailed(f"{name} ended {got} {counts}: {status}")
        await self._delete_and_wait(kube.RAYJOBS, name)

    async def _job_fails(self, name: str, kind: str) -> None:
        await self._job(
            name,
            kind,
            entrypoint="sleep 1; exit 1",
            backoffLimit=1,
            shutdownAfterJobFinishes=True,
            ttlSecondsAfterFinished=0,
        )
        status = await self._finished(name)
        got = (status.get("jobDeploymentStatus"), status.get("jobStatus"), status.get("reason"))
        counts = (status.get("failed"), status.get("succeeded", 0))
        if got != ("Failed", "FAILED", "AppFailed") or counts != (2, 0):
            raise LifecycleFailed(f"{name} ended {got} {counts}: {status}")
        await self._delete_and_wait(kube.RAYJOBS, name)

    async def _job_deleted(self, name: str, kind: str) -> None:
        await self._job(name, kind, entrypoint="sleep 600", shutdownAfterJobFinishes=True)
        await self._status(kube.RAYJOBS, name, lambda _, s: s.get("jobStatus") == "RUNNING")
        await self._delete_and_wait(kube.RAYJOBS, name)

    async def _service(self, name: str, _: str) -> None:
        doc = _service_doc(name)
        await self._create(kube.RAYSERVICES, doc)
        await self._status(kube.RAYSERVICES, name, _service_ready)
        config = doc["spec"]["serveConfigV2"].replace("num_replicas: 1", "num_replicas: 2")
        assert config != doc["spec"]["serveConfigV2"]
        patch = {"spec": {"serveConfigV2": config}}
        updated = await self._call(
            f"update {name}", lambda: self.client.patch(kube.RAYSERVICES, NAMESPACE, name, patch)
        )
        generation = updated["metadata"]["generation"]

        def caught_up(found: dict[str, Any], status: dict[str, Any]) -> bool:
            return bool(
                status.get("observedGeneration", 0) >= generation
                and _service_ready(found, status)
                and (status.get("activeServiceStatus") or {}).get("rayClusterName")
            )

        service = await self._status(kube.RAYSERVICES, name, caught_up)
        cluster = service["status"]["activeServiceStatus"]["rayClusterName"]

        async def served() -> bool:  # the new config reached Ray, through the service proxy
            path = f"/api/v1/namespaces/{NAMESPACE}/services/{cluster}-head-svc:dashboard/proxy"
            apps = await self.client.request("GET", f"{path}/api/serve/applications/")
            app = (apps.get("applications") or {}).get("hello") or {}
            deployments = (app.get("deployed_app_config") or {}).get("deployments") or [{}]
            return bool(app.get("status") == "RUNNING" and deployments[0].get("num_replicas") == 2)

        await until(served, self.within, f"{name}'s new Serve config running in Ray")
        await self._delete_and_wait(kube.RAYSERVICES, name)


def _service_ready(_: Any, status: dict[str, Any]) -> bool:
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    return conditions.get("Ready") == "True"


def _sample(file: str, name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO_ROOT / "samples" / file).read_text())
    doc["metadata"]["name"] = name
    return doc


def _service_doc(name: str) -> dict[str, Any]:
    docs = yaml.safe_load_all((REPO_ROOT / "samples" / "rayservice.yaml").read_text())
    service: dict[str, Any] = next(d for d in docs if d["kind"] == "RayService")
    service["metadata"]["name"] = name
    return service


def serve_app_configmap() -> dict[str, Any]:
    """The ConfigMap every RayService's head mounts (shared by all of them)."""
    docs = yaml.safe_load_all((REPO_ROOT / "samples" / "rayservice.yaml").read_text())
    configmap: dict[str, Any] = next(d for d in docs if d["kind"] == "ConfigMap")
    return configmap
