"""Fake worlds that read a whole stored object, and a router that lets one worker serve many.

The workflow tests' fake worlds (test doubles at the activity boundary: Kubernetes and Ray
cannot run inside the time-skipping tests) keep a spec dict and load it with the spec model,
which raises on a spec the model rejects. The real read activities do more: they parse the
whole object (`parse_ray_object`) and hand schema problems to the workflow as
`schema_violations`, and pass the object's labels and annotations along. The subclasses here
read a stored object the way the real activities do, so a bad object reaches the workflow as
it would in production.

`Router` registers each activity once and sends every call to the world of the CR it names
(`params.ref.uid`), so a single worker runs RayClusters, RayJobs and RayServices side by side,
valid and invalid, as the real worker does.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Callable
from typing import Any

from temporalio import activity

from activities.builders import rayservice as rs
from activities.raycluster import contract as cluster_contract
from activities.rayjob import contract as job_contract
from activities.rayservice import contract as service_contract
from crds.loading import parse_ray_object
from crds.refs import ObjectRef
from crds.violations import InvalidObjectError, Violation
from tests.badinput.objects import JSON
from tests.workflows.raycluster.fake_cluster import FakeCluster
from tests.workflows.rayjob.fake_world import FakeJobWorld
from tests.workflows.rayservice.fake_world import FakeServiceWorld


def _meta(doc: JSON) -> JSON:
    meta = doc.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _schema_violations(doc: JSON) -> list[str]:
    try:
        parse_ray_object(doc)
    except InvalidObjectError as err:
        return [str(v) for v in err.violations]
    return []


class StoredCluster(FakeCluster):
    """A RayCluster read from a whole stored object (see the module docstring)."""

    def __init__(self, doc: JSON) -> None:
        super().__init__(str(_meta(doc).get("name")), doc.get("spec"))  # type: ignore[arg-type]
        self.doc = doc
        self.annotations = dict(_meta(doc).get("annotations") or {})

    @activity.defn(name=cluster_contract.READ_CLUSTER.name)
    async def read(
        self, params: cluster_contract.ReadClusterInput
    ) -> cluster_contract.ClusterSnapshot:
        problems = _schema_violations(self.doc)
        if problems:
            return cluster_contract.ClusterSnapshot(
                generation=self.generation,
                annotations=dict(self.annotations),
                labels=dict(_meta(self.doc).get("labels") or {}),
                schema_violations=problems,
            )
        snapshot = await super().read(params)
        snapshot.labels = dict(_meta(self.doc).get("labels") or {})
        return snapshot


class StoredJob(FakeJobWorld):
    """A RayJob read from a whole stored object (see the module docstring)."""

    def __init__(self, doc: JSON) -> None:
        super().__init__(str(_meta(doc).get("name")), doc.get("spec"))  # type: ignore[arg-type]
        self.doc = doc

    @activity.defn(name=job_contract.READ_RAYJOB.name)
    async def read(self, params: job_contract.ReadJobInput) -> job_contract.JobSnapshot:
        meta = _meta(self.doc)
        problems = _schema_violations(self.doc)
        if problems:
            snapshot = job_contract.JobSnapshot(
                generation=self.generation, schema_violations=problems
            )
        else:
            snapshot = await super().read(params)
        snapshot.labels = dict(meta.get("labels") or {})
        snapshot.annotations = dict(meta.get("annotations") or {})
        return snapshot


class StoredService(FakeServiceWorld):
    """A RayService read from a whole stored object (see the module docstring)."""

    def __init__(self, doc: JSON) -> None:
        super().__init__(str(_meta(doc).get("name")), doc.get("spec"))  # type: ignore[arg-type]
        self.doc = doc
        self.annotations = dict(_meta(doc).get("annotations") or {})

    @activity.defn(name=service_contract.READ_SERVICE.name)
    async def read(
        self, params: service_contract.ReadServiceInput
    ) -> service_contract.ServiceSnapshot:
        problems = _schema_violations(self.doc)
        if problems:
            return service_contract.ServiceSnapshot(
                generation=self.generation,
                finalizers=list(self.finalizers),
                annotations=dict(self.annotations),
                schema_violations=problems,
            )
        snapshot = await super().read(params)
        text = self.spec.get("serveConfigV2")
        if text:
            # The real read checks the Serve config here; the workflow never sees its text.
            try:
                rs.parse_serve_config(text)
            except rs.ServeConfigError as err:
                violation = Violation("spec.serveConfigV2", str(err))
                snapshot.schema_violations.append(str(violation))
        return snapshot


WORLDS: dict[str, Callable[[JSON], Any]] = {
    "RayCluster": StoredCluster,
    "RayJob": StoredJob,
    "RayService": StoredService,
}
"""The world class for each kind."""

_TEMPLATE_SPEC: JSON = {"headGroupSpec": {"template": {}}, "rayClusterConfig": {}}


class Router:
    """Every activity once, each call served by the world of the CR it is about."""

    def __init__(self) -> None:
        self.worlds: dict[str, Any] = {}

    def add(self, doc: JSON) -> tuple[ObjectRef, Any]:
        """A world for a stored object, under a fresh uid; returns its ref and the world."""
        kind = str(doc["kind"])
        world = WORLDS[kind](copy.deepcopy(doc))
        ref = ObjectRef(kind=kind, namespace="default", name=world.name, uid=_uid(self.worlds))
        self.worlds[ref.uid] = world
        return ref, world

    def activities(self) -> list[Callable[..., Any]]:
        """One dispatcher per activity name of the three kinds' worlds."""
        found: dict[str, Callable[..., Any]] = {}
        for make in WORLDS.values():
            template = make({"kind": "", "metadata": {"name": "t"}, "spec": _TEMPLATE_SPEC})
            for method in template.activities():
                name = activity._Definition.must_from_callable(method).name
                found.setdefault(name, self._dispatcher(name, method))
        return list(found.values())

    def _dispatcher(self, name: str, method: Any) -> Callable[..., Any]:
        hints = typing.get_type_hints(method.__func__)
        attribute = method.__name__

        async def dispatch(params: Any) -> Any:
            world = self.worlds[params.ref.uid]
            return await getattr(world, attribute)(params)

        # The data converter reads the argument and result types from the annotations.
        dispatch.__annotations__ = {"params": hints["params"], "return": hints.get("return")}
        return activity.defn(name=name)(dispatch)


def _uid(taken: dict[str, Any]) -> str:
    return f"00000000-0000-4000-8000-{len(taken):012d}"
