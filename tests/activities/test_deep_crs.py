"""A CR nested deeper than the worker can carry is refused as invalid, and stays writable.

Two depths: 300 levels decode as JSON but cannot travel in a Temporal payload (pydantic's
parser stops at 200), so the activity's result could not reach its workflow; 2,000 levels do
not decode at all in Python. Either way the read reports a violation at the field where the
object goes too deep (the workflow then refuses the CR as for any invalid spec), and the
writes its refusal needs (status, finalizer) still work.
"""

from __future__ import annotations

import contextlib
import copy
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import ActivityEnvironment

from activities.builders import DEFAULT_OPTIONS
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.raycluster import contract as cluster_contract
from activities.raycluster.kube_effects import ClusterActivities
from activities.rayjob import contract as job_contract
from activities.rayjob.kube_effects import JobActivities
from activities.rayservice import contract as service_contract
from activities.rayservice.kube_effects import ServiceActivities
from crds.enums import JobDeploymentStatus
from crds.raycluster import RayClusterStatus
from crds.rayjob import RayJobStatus
from crds.refs import ObjectRef
from devcluster.server import DevCluster
from kuberay_temporal.crd_install import install_crds
from tests.activities.raycluster.test_kube_effects import SPEC as CLUSTER_SPEC
from tests.activities.rayservice.test_kube_effects import SPEC as SERVICE_SPEC
from tests.deep_objects import PLACEHOLDER, deepening_proxy

pytestmark = pytest.mark.timeout(120)

DEPTHS = [pytest.param(300, id="300-levels"), pytest.param(2000, id="2000-levels")]


@dataclass
class Clients:
    """`store` writes CRs holding the placeholder; `worker` reads them nested deep."""

    store: KubeClient
    worker: KubeClient


@contextlib.asynccontextmanager
async def deep_api(tmp_path: Path, levels: int) -> AsyncIterator[Clients]:
    async with DevCluster(tmp_path / "cluster") as cluster:
        store = await kube.connect(str(cluster.kubeconfig_path))
        await install_crds(store)
        async with deepening_proxy(cluster.url, tmp_path, levels) as config:
            worker = await kube.connect(str(config))
            try:
                yield Clients(store, worker)
            finally:
                await worker.close()
                await store.close()


def template_with_deep_value(spec: dict[str, Any], *group_path: str) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    group = spec
    for key in group_path:
        group = group[key]
    group["template"]["spec"]["x"] = PLACEHOLDER
    return spec


async def create(client: KubeClient, kind: str, resource: kube.Resource, spec: Any) -> ObjectRef:
    name = f"deep-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }
    created = await client.create(resource, "default", body)
    return ObjectRef(kind=kind, namespace="default", name=name, uid=created["metadata"]["uid"])


@dataclass(frozen=True)
class Kind:
    """How to store one kind with a deep value, and read it as its workflow does."""

    kind: str
    resource: kube.Resource
    spec: dict[str, Any]
    read: Callable[[KubeClient, ObjectRef], Awaitable[Any]]
    where: str


def _read_cluster(client: KubeClient, ref: ObjectRef) -> Awaitable[Any]:
    read = ClusterActivities(client, DEFAULT_OPTIONS).read
    return ActivityEnvironment().run(read, cluster_contract.ReadClusterInput(ref=ref))


def _read_job(client: KubeClient, ref: ObjectRef) -> Awaitable[Any]:
    read = JobActivities(client, DEFAULT_OPTIONS).read
    return ActivityEnvironment().run(read, job_contract.ReadJobInput(ref=ref))


def _read_service(client: KubeClient, ref: ObjectRef) -> Awaitable[Any]:
    read = ServiceActivities(client).read
    return ActivityEnvironment().run(read, service_contract.ReadServiceInput(ref=ref))


KINDS = [
    pytest.param(
        Kind(
            "RayCluster",
            kube.RAYCLUSTERS,
            template_with_deep_value(CLUSTER_SPEC, "headGroupSpec"),
            _read_cluster,
            "spec.headGroupSpec.template.spec.x.a.a.a…",
        ),
        id="RayCluster",
    ),
    pytest.param(
        Kind(
            "RayJob",
            kube.RAYJOBS,
            {
                "entrypoint": "python x.py",
                "rayClusterSpec": template_with_deep_value(CLUSTER_SPEC, "headGroupSpec"),
            },
            _read_job,
            "spec.rayClusterSpec.headGroupSpec.template.spec.x.a.a…",
        ),
        id="RayJob",
    ),
    pytest.param(
        Kind(
            "RayService",
            kube.RAYSERVICES,
            template_with_deep_value(SERVICE_SPEC, "rayClusterConfig", "headGroupSpec"),
            _read_service,
            "spec.rayClusterConfig.headGroupSpec.template.spec.x.a.a…",
        ),
        id="RayService",
    ),
]


@pytest.mark.parametrize("levels", DEPTHS)
@pytest.mark.parametrize("kind", KINDS)
async def test_the_read_reports_where_the_cr_nests_too_deep(
    tmp_path: Path, kind: Kind, levels: int
) -> None:
    async with deep_api(tmp_path, levels) as clients:
        ref = await create(clients.store, kind.kind, kind.resource, kind.spec)
        snap = await kind.read(clients.worker, ref)
    assert snap.exists and snap.generation == 1
    assert snap.schema_violations == [f"{kind.where}: nested deeper than 100 levels"]
    assert snap.spec is None
    # What the workflow receives: the snapshot must survive the payload converter.
    converter = pydantic_data_converter.payload_converter
    (back,) = converter.from_payloads(converter.to_payloads([snap]), [type(snap)])
    assert back == snap


async def test_its_status_and_finalizer_can_still_be_written(tmp_path: Path) -> None:
    """Each write reads the CR first (its status keys, its finalizers): metadata is whole."""
    async with deep_api(tmp_path, 2000) as clients:
        cluster_spec = template_with_deep_value(CLUSTER_SPEC, "headGroupSpec")
        cluster = await create(clients.store, "RayCluster", kube.RAYCLUSTERS, cluster_spec)
        write = ClusterActivities(clients.worker, DEFAULT_OPTIONS).write_status
        status = RayClusterStatus(state="failed", reason="invalid")
        await ActivityEnvironment().run(
            write, cluster_contract.WriteStatusInput(ref=cluster, status=status)
        )

        job_spec = {"entrypoint": "python x.py", "rayClusterSpec": cluster_spec}
        job = await create(clients.store, "RayJob", kube.RAYJOBS, job_spec)
        jobs = JobActivities(clients.worker, DEFAULT_OPTIONS)
        failed = RayJobStatus(job_deployment_status=JobDeploymentStatus.VALIDATION_FAILED)
        await ActivityEnvironment().run(
            jobs.write_status, job_contract.WriteJobStatusInput(ref=job, status=failed)
        )
        finalizer = job_contract.SetFinalizerInput(ref=job, present=True)
        await ActivityEnvironment().run(jobs.set_finalizer, finalizer)
        finalizer = job_contract.SetFinalizerInput(ref=job, present=False)
        await ActivityEnvironment().run(jobs.set_finalizer, finalizer)

        stored_cluster = await clients.store.get(kube.RAYCLUSTERS, "default", cluster.name)
        stored_job = await clients.store.get(kube.RAYJOBS, "default", job.name)
    assert stored_cluster["status"]["state"] == "failed"
    assert stored_job["status"]["jobDeploymentStatus"] == "ValidationFailed"
    assert not stored_job["metadata"].get("finalizers")
