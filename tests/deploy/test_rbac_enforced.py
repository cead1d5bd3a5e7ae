"""The worker and the bridge as deploy/'s ServiceAccounts, against an API server enforcing RBAC.

test_rbac.py compares the rules with what a scan of the code calls; this runs the code. A
real kube-apiserver (`--authorization-mode=Node,RBAC`) is given deploy/'s Namespace,
ServiceAccounts, ClusterRoles and bindings (`kuberay_temporal.service_accounts`), the worker
and the bridge run in this process with kubeconfigs holding those accounts' tokens, and the
three kinds are applied as an administrator would. Whatever the rules miss is a 403 for the
account, which an activity retries (pending, with the refusal as its last failure) or reports
as a Warning Event; the tests look for both. The real API server also checks what no scan
does: that the Role the worker creates for the autoscaler grants nothing the worker lacks.

The control plane has no node, so nothing runs the pods: where a test needs a Ray cluster to
be ready (a RayJob creates its submitter Job only then), it plays the kubelet and writes the
pods' status as ready through the `pods/status` subresource, as an administrator.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio
import yaml
from temporalio.client import Client
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeNotFound
from activities.raycronjob.schedules import described
from activities.registry import build_activities, watching
from bridge.running import Bridge
from bridge.signalling import Signaller
from crds.constants import LABEL_CLUSTER
from devcluster.control_plane.processes import ControlPlane
from kuberay_temporal.crd_install import install_crds
from kuberay_temporal.service_accounts import (
    BRIDGE,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    SINGLE_NAMESPACE,
    WORKER,
    Identities,
    apply_identities,
    deploy_identities,
    render_identities,
)
from tests.deploy.rendering import kustomize_docs, kustomize_overlay_docs, settings_env
from tests.eventually import eventually
from tests.reference import REPO_ROOT
from worker.running import build_worker
from runtime.settings import Settings

SAMPLES = REPO_ROOT / "samples"
RAY_KINDS = (kube.RAYCLUSTERS, kube.RAYJOBS, kube.RAYSERVICES, kube.RAYCRONJOBS)
SUBJECT_ACCESS_REVIEWS = kube.Resource("authorization.k8s.io", "v1", "subjectaccessreviews", False)

T = TypeVar("T")

pytestmark = pytest.mark.timeout(300)


@dataclass
class Operator:
    """The worker and the bridge, running as their ServiceAccounts; an admin client beside."""

    admin: KubeClient
    temporal: Client
    task_queue: str
    namespace: str
    bridge: asyncio.Task[None]

    async def apply(self, sample: str, **spec: Any) -> kube.JSON:
        """Create the ray.io object of one of our samples (its other objects first)."""
        created: kube.JSON = {}
        for doc in yaml.safe_load_all((SAMPLES / sample).read_text()):
            body = copy.deepcopy(doc)
            body["metadata"]["namespace"] = self.namespace
            if doc["kind"] == "ConfigMap":
                await self.admin.create(kube.CONFIGMAPS, self.namespace, body)
                continue
            body["spec"].update(spec)
            resource = {r.plural: r for r in RAY_KINDS}[f"{doc['kind'].lower()}s"]
            created = await self.admin.create(resource, self.namespace, body)
        return created

    async def owned_by(self, resource: kube.Resource, owner: kube.JSON) -> list[kube.JSON]:
        """The objects of `resource` in the namespace whose owner is `owner`."""
        uid = owner["metadata"]["uid"]
        found = await self.admin.list_all(resource, self.namespace)
        return [
            item
            for item in found
            if uid in {ref["uid"] for ref in item["metadata"].get("ownerReferences") or []}
        ]

    async def events(self, involved: kube.JSON) -> list[kube.JSON]:
        """The Events about one object, as `kubectl describe` lists them."""
        found = await self.admin.list_all(kube.EVENTS, self.namespace)
        uid = involved["metadata"]["uid"]
        return [e for e in found if e["involvedObject"].get("uid") == uid]

    async def play_kubelet(self, cluster_name: str) -> None:
        """Write every pod of a Ray cluster as running and ready (no node runs them)."""
        pods = await self.admin.list_all(
            kube.PODS, self.namespace, f"{LABEL_CLUSTER}={cluster_name}"
        )
        for number, pod in enumerate(pods, start=10):
            if (pod.get("status") or {}).get("phase") == "Running":
                continue
            ip = f"10.244.0.{number}"
            status = {
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "conditions": [{"type": "Ready", "status": "True"}],
            }
            name = pod["metadata"]["name"]
            with contextlib.suppress(KubeNotFound):  # a pod the worker just deleted
                await self.admin.patch(
                    kube.PODS, self.namespace, name, {"status": status}, sub="status"
                )

    async def eventually(
        self, probe: Callable[[], Awaitable[T | None]], message: str, within: float = 60
    ) -> T:
        """`tests.eventually.eventually`, failing with the refusals met on the way, if any."""
        try:
            return await eventually(probe, within=within, message=message)
        except AssertionError as err:
            refused = await self.refusals()
            raise AssertionError(f"{err}; refused: {refused}" if refused else str(err)) from None

    async def refusals(self) -> list[str]:
        """The Kubernetes refusals the worker's activities are retrying, or the bridge met."""
        found = []
        query = f"TaskQueue = '{self.task_queue}'"
        async for listed in self.temporal.list_workflows(query):
            handle = self.temporal.get_workflow_handle(listed.id, run_id=listed.run_id)
            description = await handle.describe()
            for pending in description.raw_description.pending_activities:
                failure = pending.last_failure.message
                if "403" in failure or "forbidden" in failure.lower():
                    found.append(f"{listed.id} {pending.activity_type.name}: {failure}")
        if self.bridge.done() and not self.bridge.cancelled():
            found.append(f"bridge stopped: {self.bridge.exception()!r}")
        return found


def worker_settings(task_queue: str, *components: str) -> Settings:
    """The manifests' settings for the worker, on this test's task queue."""
    docs = kustomize_overlay_docs(*components) if components else kustomize_docs()
    env = settings_env(docs, "worker")
    return Settings.from_env(
        env
        | {
            "KUBERAY_TEMPORAL_TASK_QUEUE": task_queue,
            # Activities stuck on a dashboard no pod serves need not delay the teardown.
            "KUBERAY_TEMPORAL_GRACEFUL_SHUTDOWN_TIMEOUT": "1",
        }
    )


@contextlib.asynccontextmanager
async def running_as(
    identities: Identities,
    temporal: Client,
    task_queue: str,
    namespace: str,
    settings: Settings | None = None,
) -> AsyncIterator[asyncio.Task[None]]:
    """Run the worker and the bridge (the task yielded) in this process, each as its account.

    The bridge and the worker's copies of pods and Services watch the test's namespace only (deploy/ watches
    all): CRs other tests left elsewhere in the shared control plane are not this worker's
    business.
    """
    settings = settings or worker_settings(task_queue)
    worker_kube = await kube.connect(str(identities.worker))
    bridge_kube = await kube.connect(str(identities.bridge))
    bridge = Bridge(
        bridge_kube,
        Signaller(temporal, task_queue),
        namespaces=[namespace],
        relist_period=settings.relist_seconds,
    )
    try:
        async with watching(worker_kube, [namespace]) as copies:
            activities = build_activities(
                worker_kube,
                settings.build_options(),
                dashboard_access=settings.dashboard_access,
                job_options=settings.job_options(),
                copies=copies,
            )
            async with build_worker(temporal, settings, activities):
                task = asyncio.create_task(bridge.run())
                try:
                    await asyncio.wait_for(bridge.wait_listed(), 60)
                    yield task
                finally:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
    finally:
        await worker_kube.close()
        await bridge_kube.close()


async def _release(admin: KubeClient, namespace: str) -> None:
    """Delete the namespace with nothing left to hold it: no controller runs once we stop."""
    await _remove_ray_objects(admin, namespace)
    await admin.delete(kube.NAMESPACES, None, namespace)


@pytest_asyncio.fixture
async def operator(
    local_env: WorkflowEnvironment, control_plane: ControlPlane, task_queue: str, tmp_path: Path
) -> AsyncIterator[Operator]:
    # The dev server first: it must be up within 5 s, which a starting control plane can
    # make it miss on two cores.
    admin = await kube.connect(str(control_plane.kubeconfig_path))
    namespace = f"rbac-{uuid.uuid4().hex[:8]}"
    try:
        await install_crds(admin)
        await admin.create(
            kube.NAMESPACES,
            None,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        )
        await eventually(lambda: _served(admin, namespace), within=60, message="the ray.io kinds")
        identities = await deploy_identities(control_plane.kubeconfig_path, tmp_path)
        async with running_as(identities, local_env.client, task_queue, namespace) as task:
            yield Operator(admin, local_env.client, task_queue, namespace, task)
        await _terminate_workflows(local_env.client, task_queue)
        await _release(admin, namespace)
    finally:
        # deploy/'s rules again, whatever a test took away from them.
        await apply_identities(admin, await render_identities())
        await admin.close()


async def _served(admin: KubeClient, namespace: str) -> bool:
    """Whether the API server serves the three kinds yet (a new CRD takes a moment)."""
    try:
        for resource in RAY_KINDS:
            await admin.list_all(resource, namespace)
    except KubeNotFound:
        return False
    return True


async def _terminate_workflows(temporal: Client, task_queue: str) -> None:
    """End the entity workflows of this test: no worker polls their task queue any more."""
    async for listed in temporal.list_workflows(f"TaskQueue = '{task_queue}'"):
        with contextlib.suppress(RPCError):  # one that ended by itself
            await temporal.get_workflow_handle(listed.id).terminate("test finished")


async def test_a_raycluster_gets_its_objects_status_and_events(operator: Operator) -> None:
    # With the autoscaler on, the worker also creates a ServiceAccount, a Role and a
    # RoleBinding: the API server refuses a Role granting more than its creator holds.
    cluster = await operator.apply("raycluster.yaml", enableInTreeAutoscaling=True)
    name, ns = cluster["metadata"]["name"], operator.namespace

    async def pods() -> set[str] | None:
        found = await operator.admin.list_all(kube.PODS, ns, f"{LABEL_CLUSTER}={name}")
        types = {p["metadata"]["labels"]["ray.io/node-type"] for p in found}
        return types if types == {"head", "worker"} else None

    await operator.eventually(pods, "the head and worker pods")
    services = await operator.owned_by(kube.SERVICES, cluster)
    assert [s["metadata"]["name"] for s in services] == [f"{name}-head-svc"]
    for resource in (kube.SERVICE_ACCOUNTS, kube.ROLES, kube.ROLE_BINDINGS):
        assert await operator.owned_by(resource, cluster), resource.plural

    async def status() -> kube.JSON | None:
        current = await operator.admin.get(kube.RAYCLUSTERS, ns, name)
        written = current.get("status") or {}
        return written if written.get("desiredWorkerReplicas") == 1 else None

    written = await operator.eventually(status, "the status written")
    assert {c["type"] for c in written["conditions"]} >= {"HeadPodReady", "RayClusterProvisioned"}

    async def reasons() -> set[str] | None:
        found = {e["reason"] for e in await operator.events(cluster)}
        wanted = {"CreatedService", "CreatedRole", "CreatedHeadPod", "CreatedWorkerPod"}
        return found if wanted <= found else None

    await operator.eventually(reasons, "the Events")
    assert await operator.refusals() == []


async def test_a_rayjob_gets_its_raycluster_and_its_submitter_job(operator: Operator) -> None:
    rayjob = await operator.apply("rayjob.k8s-job-mode.yaml")

    async def cluster() -> kube.JSON | None:
        owned = await operator.owned_by(kube.RAYCLUSTERS, rayjob)
        return owned[0] if owned else None

    created = await operator.eventually(cluster, "the RayJob's RayCluster")

    async def submitter() -> list[kube.JSON] | None:
        await operator.play_kubelet(created["metadata"]["name"])
        return await operator.owned_by(kube.JOBS, rayjob) or None

    (job,) = await operator.eventually(submitter, "the submitter Job", within=120)
    assert job["metadata"]["name"] == rayjob["metadata"]["name"]
    assert await operator.refusals() == []


async def test_a_rayservice_gets_its_raycluster(operator: Operator) -> None:
    rayservice = await operator.apply("rayservice.yaml")

    async def cluster() -> list[kube.JSON] | None:
        return await operator.owned_by(kube.RAYCLUSTERS, rayservice) or None

    await operator.eventually(cluster, "the RayService's RayCluster")
    assert await operator.refusals() == []


async def test_a_raycronjob_gets_its_schedule_and_a_rayjob_per_firing(
    operator: Operator,
) -> None:
    cronjob = await operator.apply("raycronjob.yaml")
    schedule_id = f"raycronjob/{operator.namespace}/{cronjob['metadata']['name']}/"
    schedule = operator.temporal.get_schedule_handle(schedule_id + cronjob["metadata"]["uid"])

    async def created() -> bool:
        return await described(schedule) is not None

    await operator.eventually(created, "the RayCronJob's Schedule")
    await schedule.trigger()  # a firing now, not at the next minute

    async def rayjob() -> list[kube.JSON] | None:
        return await operator.owned_by(kube.RAYJOBS, cronjob) or None

    (job,) = await operator.eventually(rayjob, "the firing's RayJob")
    assert job["metadata"]["labels"]["ray.io/cronjob-name"] == cronjob["metadata"]["name"]

    async def scheduled() -> str | None:
        found = await operator.admin.get(
            kube.RAYCRONJOBS, operator.namespace, cronjob["metadata"]["name"]
        )
        return (found.get("status") or {}).get("lastScheduleTime")

    await operator.eventually(scheduled, "lastScheduleTime")
    assert await operator.refusals() == []


async def _revoke(admin: KubeClient, resource: str, verb: str, namespace: str) -> None:
    """Take `verb` on `resource` out of the worker's ClusterRole, and wait until it counts."""
    role = await admin.get(CLUSTER_ROLES, None, WORKER)
    for rule in role["rules"]:
        if rule["apiGroups"] == [""] and resource in rule["resources"]:
            assert rule["resources"] == [resource], "the rule is shared with other resources"
            rule["verbs"] = [v for v in rule["verbs"] if v != verb]
    await admin.request("PUT", CLUSTER_ROLES.path(None, WORKER), body=role)

    async def refused() -> bool:
        return not await _allowed(admin, WORKER, verb, resource, namespace)

    await eventually(refused, within=30, message=f"{verb} {resource} refused")


async def _allowed(
    admin: KubeClient, account: str, verb: str, resource: str, namespace: str
) -> bool:
    """Whether the API server lets `account` do `verb` on `resource` in `namespace` ("": all)."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:kuberay-temporal:{account}",
            "groups": ["system:serviceaccounts", "system:authenticated"],
            "resourceAttributes": {"verb": verb, "resource": resource, "namespace": namespace},
        },
    }
    answer = await admin.create(SUBJECT_ACCESS_REVIEWS, None, review)
    return bool(answer["status"].get("allowed"))


@pytest.mark.parametrize(
    ("resource", "reason"),
    [("pods", "FailedToCreateHeadPod"), ("services", "FailedToCreateService")],
)
async def test_a_rule_taken_away_is_a_warning_event_naming_the_refusal(
    operator: Operator, resource: str, reason: str
) -> None:
    await _revoke(operator.admin, resource, "create", operator.namespace)
    cluster = await operator.apply("raycluster.yaml")
    name = cluster["metadata"]["name"]

    async def warning() -> kube.JSON | None:
        found = [e for e in await operator.events(cluster) if e["reason"] == reason]
        return found[0] if found else None

    event = await eventually(warning, within=60, message=f"a {reason} Event")
    assert event["type"] == "Warning"
    account = f"system:serviceaccount:kuberay-temporal:{WORKER}"
    assert f'User "{account}" cannot create resource "{resource}"' in event["message"]
    assert event["message"].startswith("Failed to create ")
    if resource == "services":  # the activity fails: retried, with the refusal on record
        refused = await eventually(operator.refusals, within=60, message="a retried refusal")
        assert f'cannot create resource "{resource}"' in refused[0]
    if resource == "pods":  # the pass goes on to write the refusal into the status too

        async def replica_failure() -> kube.JSON | None:
            current = await operator.admin.get(kube.RAYCLUSTERS, operator.namespace, name)
            conditions = (current.get("status") or {}).get("conditions") or []
            found = [c for c in conditions if c["type"] == "ReplicaFailure"]
            return found[0] if found else None

        condition = await eventually(replica_failure, within=60, message="ReplicaFailure")
        assert condition["reason"] == "FailedCreateHeadPod" and account in condition["message"]


# --- the namespaced install (deploy/components/single-namespace) -----------------------------


@pytest_asyncio.fixture
async def namespaced_operator(
    local_env: WorkflowEnvironment, control_plane: ControlPlane, task_queue: str, tmp_path: Path
) -> AsyncIterator[Operator]:
    """The worker and the bridge with Roles in `kuberay-temporal` only: no ClusterRole binds
    their accounts (those other tests applied are unbound first, and bound again after)."""
    admin = await kube.connect(str(control_plane.kubeconfig_path))
    namespace = "kuberay-temporal"
    try:
        await install_crds(admin)
        await eventually(lambda: _served(admin, namespace), within=60, message="the ray.io kinds")
        for account in (WORKER, BRIDGE):
            with contextlib.suppress(KubeNotFound):
                await admin.delete(CLUSTER_ROLE_BINDINGS, None, account)
        identities = await deploy_identities(
            control_plane.kubeconfig_path, tmp_path, components=[SINGLE_NAMESPACE]
        )

        async def namespaced_only() -> bool:
            return await _allowed(admin, BRIDGE, "watch", "pods", namespace) and not (
                await _allowed(admin, BRIDGE, "watch", "pods", "")
            )

        await eventually(namespaced_only, within=30, message="the bridge's rights namespaced")
        settings = worker_settings(task_queue, SINGLE_NAMESPACE)
        assert settings.namespaces == [namespace]
        async with running_as(
            identities, local_env.client, task_queue, namespace, settings
        ) as task:
            yield Operator(admin, local_env.client, task_queue, namespace, task)
        await _terminate_workflows(local_env.client, task_queue)
        await _remove_ray_objects(admin, namespace)
    finally:
        await apply_identities(admin, await render_identities())
        await admin.close()


async def _remove_ray_objects(admin: KubeClient, namespace: str) -> None:
    """Delete the test's ray.io objects, finalizers first: no controller runs once we stop."""
    for resource in RAY_KINDS:
        for item in await admin.list_all(resource, namespace):
            name = item["metadata"]["name"]
            with contextlib.suppress(KubeNotFound):
                await admin.patch(resource, namespace, name, {"metadata": {"finalizers": None}})
                await admin.delete(resource, namespace, name)


async def test_a_namespaced_install_runs_a_raycluster_to_ready(
    namespaced_operator: Operator,
) -> None:
    operator = namespaced_operator
    cluster = await operator.apply("raycluster.yaml")
    name = cluster["metadata"]["name"]

    async def ready() -> str | None:
        await operator.play_kubelet(name)
        found = await operator.admin.get(kube.RAYCLUSTERS, operator.namespace, name)
        state = (found.get("status") or {}).get("state")
        return state if state == "ready" else None

    await operator.eventually(ready, "the RayCluster ready", within=120)
    services = await operator.owned_by(kube.SERVICES, cluster)
    assert f"{name}-head-svc" in {s["metadata"]["name"] for s in services}
    assert await operator.refusals() == []
