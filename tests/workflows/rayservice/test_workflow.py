"""The RayService workflow and its upgrade child on the time-skipping server.

Kubernetes and the dashboards are replaced at the activity boundary by `FakeServiceWorld`.
Each test gets its own server: skipping time for one test must not fire another's timers.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest_asyncio
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.rayservice import contract
from crds.rayservice import RayServiceStatus
from tests.eventually import eventually
from tests.workflows.harness import EntityHarness
from worker.running import strict_sandbox_runner
from workflows import messages
from workflows.rayservice.state import RayServiceInput
from workflows.rayservice.upgrade_child import RayServiceUpgradeWorkflow
from workflows.rayservice.workflow import RayServiceWorkflow

from .fake_world import READY_GATEWAY, FakeServiceWorld

CLUSTER: dict[str, Any] = {
    "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "h"}]}}},
    "workerGroupSpecs": [
        {
            "groupName": "g",
            "replicas": 1,
            "minReplicas": 0,
            "maxReplicas": 5,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "w"}]}},
        }
    ],
}
SPEC: dict[str, Any] = {
    "serveConfigV2": "applications:\n  - name: app1\n    import_path: a:b\n",
    "rayClusterConfig": CLUSTER,
}
INCREMENTAL: dict[str, Any] = {
    **SPEC,
    "rayClusterConfig": {**CLUSTER, "enableInTreeAutoscaling": True},
    "upgradeStrategy": {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "maxSurgePercent": 50,
            "stepSizePercent": 25,
            "intervalSeconds": 30,
            "gatewayClassName": "istio",
        },
    },
}


class Harness(EntityHarness):
    kind, run, input_type = "RayService", RayServiceWorkflow.run, RayServiceInput

    def __init__(self, env: WorkflowEnvironment, world: FakeServiceWorld, queue: str) -> None:
        super().__init__(env, world.name, queue)
        self.world = world

    async def spec_changed(self) -> None:
        await self.signal(
            messages.SPEC_CHANGED, messages.SpecChanged(generation=self.world.generation)
        )

    async def nudge(self) -> None:
        await self.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["RayCluster"]))

    async def ready(self) -> str:
        """Wait until the first cluster serves and the status says Ready."""
        world = self.world
        ready = ("True", "NonZeroServeEndpoints")
        return await eventually(
            lambda: (
                world.active()
                if world.condition("Ready") == ready and world.serving() == world.active()
                else None
            ),
            message="a ready, serving active cluster",
        )


@pytest_asyncio.fixture
async def make(env: WorkflowEnvironment, task_queue: str) -> AsyncIterator[Any]:
    harnesses: list[Harness] = []
    workers: list[Worker] = []

    async def build(spec: dict[str, Any], auto_ready: bool = True) -> Harness:
        world = FakeServiceWorld(f"svc{uuid.uuid4().hex[:4]}", spec, auto_ready)
        worker = Worker(
            env.client,
            task_queue=task_queue,
            workflows=[RayServiceWorkflow, RayServiceUpgradeWorkflow],
            activities=world.activities(),
            workflow_runner=strict_sandbox_runner(),
        )
        await worker.__aenter__()
        workers.append(worker)
        harness = Harness(env, world, task_queue)
        harnesses.append(harness)
        return harness

    yield build
    for harness in harnesses:
        await harness.terminate()
    for worker in workers:
        await worker.__aexit__(None, None, None)


async def test_first_deploy_becomes_ready(make: Any) -> None:
    h = await make(SPEC)
    await h.start()
    active = await h.ready()
    world = h.world
    assert world.created == [active] and world.finalizers
    assert world.clusters[active].applied == [(SPEC["serveConfigV2"], None)]
    assert world.status and world.status.active_service_status
    apps = world.status.active_service_status.applications or {}
    assert apps["app1"].status == "RUNNING"
    assert (await h.progress()).state == "Ready"
    # As KubeRay: the Serve config submitted to the new cluster is an Event.
    (updated,) = [e for e in world.events if e.reason == "UpdatedServeApplications"]
    assert updated.message == f"Updated serve applications to the RayCluster default/{active}"


async def test_a_cluster_field_behind_a_gate_that_is_off_is_refused(make: Any) -> None:
    h = await make({**SPEC, "rayClusterConfig": {**CLUSTER, "tlsOptions": {"enabled": True}}})
    await h.start()
    event = await eventually(
        lambda: next((e for e in h.world.events if e.reason == "InvalidRayServiceSpec"), None)
    )
    assert "spec.rayClusterConfig.tlsOptions: requires the RayClusterMTLS feature gate" in (
        event.message
    )
    assert h.world.created == []


async def test_serve_config_change_is_applied_in_place(make: Any) -> None:
    h = await make(SPEC)
    await h.start()
    active = await h.ready()
    new_config = "applications:\n  - name: app1\n    import_path: a:c\n"
    h.world.edit(serveConfigV2=new_config)
    await h.spec_changed()
    await eventually(lambda: len(h.world.clusters[active].applied) == 2)
    assert h.world.clusters[active].applied[-1] == (new_config, None)
    assert h.world.created == [active]


async def test_cluster_change_is_blue_green_and_the_old_cluster_goes_after_the_delay(
    make: Any, env: WorkflowEnvironment
) -> None:
    h = await make({**SPEC, "rayClusterDeletionDelaySeconds": 120})
    await h.start()
    old = await h.ready()
    h.world.edit_cluster(headGroupSpec={**CLUSTER["headGroupSpec"], "rayStartParams": {"x": "1"}})
    await h.spec_changed()
    new = await eventually(lambda: h.world.active() if h.world.active() != old else None)
    assert h.world.serving() == new and old in h.world.clusters
    promoted_at = await env.get_current_time()
    await env.sleep(timedelta(seconds=130))
    (name, at), *_ = await eventually(lambda: h.world.deleted)
    assert name == old
    assert timedelta(seconds=110) <= at - promoted_at <= timedelta(seconds=125)


async def test_an_upgrade_outlives_every_attempt_of_a_wait_failing(
    make: Any, env: WorkflowEnvironment
) -> None:
    """A wait that fails all its attempts (its worker killed each time) is "not healthy yet"."""
    h = await make(SPEC)
    await h.start()
    old = await h.ready()
    h.world.failing_waits = 3  # every attempt of one activity call
    h.world.edit_cluster(headGroupSpec={**CLUSTER["headGroupSpec"], "rayStartParams": {"x": "1"}})
    await h.spec_changed()
    new = await eventually(lambda: h.world.active() if h.world.active() != old else None)

    assert h.world.failing_waits == 0
    # Upgrade 1 brought up the first cluster; this is upgrade 2, and there is no third.
    child = env.client.get_workflow_handle(f"{h.ref.workflow_id}/upgrade/2")
    assert (await child.describe()).status == WorkflowExecutionStatus.COMPLETED
    assert h.world.serving() == new
    assert not any("failed" in d for d in (await h.progress()).last_decisions)


async def test_zero_downtime_off_keeps_the_cluster_when_the_type_is_unset(
    make: Any, env: WorkflowEnvironment
) -> None:
    """ENABLE_ZERO_DOWNTIME=false: an unset upgradeStrategy.type acts as None (S12)."""
    h = await make(SPEC)
    h.world.zero_downtime = False
    await h.start()
    old = await h.ready()
    h.world.edit_cluster(headGroupSpec={**CLUSTER["headGroupSpec"], "rayStartParams": {"x": "1"}})
    await h.spec_changed()
    new_config = "applications:\n  - name: app1\n    import_path: a:c\n"
    h.world.edit(serveConfigV2=new_config)
    await h.spec_changed()
    # The serve config still goes in place (S12); the cluster change starts no upgrade.
    await eventually(lambda: h.world.clusters[old].applied[-1] == (new_config, None))
    await env.sleep(timedelta(seconds=60))
    assert h.world.created == [old] and h.world.active() == old


async def test_incremental_upgrade_moves_weights_in_steps_at_the_interval(
    make: Any, env: WorkflowEnvironment
) -> None:
    h = await make(INCREMENTAL)
    await h.start()
    old = await h.ready()
    h.world.edit_cluster(rayVersion="2.50.0")
    await h.spec_changed()
    for _ in range(8):  # the interval timers fire only when the server skips time
        await env.sleep(timedelta(seconds=31))
    new = await eventually(lambda: h.world.active() if h.world.active() != old else None)
    weights = [w[new] for _, w in h.world.routes if old in w and new in w]
    assert weights == [0, 25, 50, 75, 100]
    times = [at for at, w in h.world.routes if old in w and w.get(new, 0) > 0]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert all(gap >= timedelta(seconds=30) for gap in gaps)
    capacities = [c for _, c in h.world.clusters[new].applied]
    assert capacities == [0, 50, 100]
    assert h.world.serving() == new


async def test_traffic_steps_wait_while_the_gateway_reports_not_programmed(
    make: Any, env: WorkflowEnvironment
) -> None:
    h = await make(INCREMENTAL)
    await h.start()
    old = await h.ready()
    h.world.gateway_status = contract.GatewayRouteStatus(
        gateway=[
            contract.RouteCondition(type="Accepted", status="True"),
            contract.RouteCondition(type="Programmed", status="False", reason="AddressNotAssigned"),
        ]
    )
    h.world.edit_cluster(rayVersion="2.50.0")
    await h.spec_changed()
    await eventually(
        lambda: "Gateway Programmed is False" in _message(h.world, "UpgradeInProgress"),
        message="the held step in the status",
    )
    for _ in range(3):
        await env.sleep(timedelta(seconds=31))
    new = next(n for n in h.world.clusters if n != old)
    assert {w.get(new, 0) for _, w in h.world.routes} == {0}  # no traffic moved
    assert h.world.gateway_reads >= 2
    h.world.gateway_status = READY_GATEWAY  # now programmed
    await h.nudge()
    for _ in range(8):
        await env.sleep(timedelta(seconds=31))
    await eventually(lambda: h.world.active() == new, message="the upgrade done")
    weights = [w[new] for _, w in h.world.routes if old in w and new in w]
    assert weights == [0, 25, 50, 75, 100]
    assert "blocked" not in _message(h.world, "UpgradeInProgress")


async def test_the_route_resolves_the_pending_backend_before_the_first_gated_step(
    make: Any, env: WorkflowEnvironment
) -> None:
    """The first route names the pending cluster before it exists: written again once it does."""
    h = await make(INCREMENTAL)
    await h.start()
    old = await h.ready()
    h.world.report_refs = True
    h.world.edit_cluster(rayVersion="2.50.0")
    await h.spec_changed()
    for _ in range(8):
        await env.sleep(timedelta(seconds=31))
    new = await eventually(lambda: h.world.active() if h.world.active() != old else None)
    weights = [w[new] for _, w in h.world.routes if old in w and new in w]
    assert weights == [0, 25, 50, 75, 100]


async def test_an_incremental_upgrade_never_puts_the_new_serve_config_on_the_active_cluster(
    make: Any, env: WorkflowEnvironment
) -> None:
    """Image and Serve config changed together: the old cluster keeps serving its own config,
    only its target_capacity falls; the new config goes to the new cluster alone."""
    h = await make(INCREMENTAL)
    await h.start()
    old = await h.ready()
    first = h.world.spec["serveConfigV2"]
    second = first.replace("import_path: a:b", "import_path: a:c")
    assert second != first
    h.world.edit_cluster(rayVersion="2.50.0")
    h.world.edit(serveConfigV2=second)
    await h.spec_changed()
    before = h.world.clusters[old]  # kept: the old cluster is deleted after the upgrade
    for _ in range(8):
        await env.sleep(timedelta(seconds=31))
    new = await eventually(lambda: h.world.active() if h.world.active() != old else None)
    assert {config for config, _ in before.applied} == {first}
    assert [c for _, c in before.applied][-1] is not None  # its capacity was lowered
    assert {config for config, _ in h.world.clusters[new].applied} == {second}


async def test_a_rollback_midway_leaves_the_active_cluster_on_its_own_config(
    make: Any, env: WorkflowEnvironment
) -> None:
    h = await make(INCREMENTAL)
    await h.start()
    old = await h.ready()
    first = h.world.spec["serveConfigV2"]
    h.world.edit_cluster(rayVersion="2.50.0")
    h.world.edit(serveConfigV2=first.replace("import_path: a:b", "import_path: a:c"))
    await h.spec_changed()
    new = await eventually(lambda: next((n for n in h.world.clusters if n != old), None))

    def lowered() -> bool:  # the old cluster's capacity went down, traffic is split
        capacities = [c for _, c in h.world.clusters[old].applied]
        return any(c not in (None, 100) for c in capacities) and h.world.routes[-1][1][new] > 0

    while not lowered():  # one interval at a time, so the upgrade stops midway
        await env.sleep(timedelta(seconds=31))
    assert h.world.routes[-1][1][new] < 100
    await h.signal(messages.ROLLBACK, messages.UserRequest(reason="bad release"))
    await eventually(lambda: new not in h.world.clusters, message="pending deleted")
    assert h.world.routes[-1][1] == {old: 100, new: 0}
    assert h.world.clusters[old].applied[-1] == (first, 100)
    assert {config for config, _ in h.world.clusters[old].applied} == {first}


async def test_rollback_signal_returns_traffic_and_deletes_the_pending_cluster(
    make: Any,
) -> None:
    h = await make(INCREMENTAL)
    await h.start()
    old = await h.ready()
    h.world.auto_ready = False  # the new cluster never gets ready on its own
    h.world.edit_cluster(rayVersion="2.50.0")
    await h.spec_changed()
    pending = await eventually(lambda: next((n for n in h.world.clusters if n != old), None))
    await eventually(
        lambda: h.world.condition("UpgradeInProgress") == ("True", "BothActivePendingClustersExist")
    )
    await h.signal(messages.ROLLBACK, messages.UserRequest(reason="bad release"))
    await eventually(lambda: pending not in h.world.clusters, message="pending deleted")
    assert h.world.routes[-1][1] == {old: 100, pending: 0}
    assert h.world.annotations["ray.io/rollback-requested"]
    assert any(e.reason == "RollbackRequested" for e in h.world.events)
    await eventually(lambda: h.world.condition("UpgradeInProgress") == ("False", "RolledBack"))
    await h.nudge()
    await eventually(lambda: h.world.condition("Ready") == ("True", "NonZeroServeEndpoints"))
    assert list(h.world.clusters) == [old] and h.world.active() == old


async def test_reverting_the_spec_mid_upgrade_rolls_back_and_removes_the_condition(
    make: Any, env: WorkflowEnvironment
) -> None:
    """S15: the goal back at the active spec rolls traffic back; then the condition goes."""
    h = await make(INCREMENTAL)
    await h.start()
    old = await h.ready()
    original = copy.deepcopy(h.world.spec["rayClusterConfig"])
    h.world.edit_cluster(rayVersion="2.50.0")
    await h.spec_changed()
    pending = await eventually(
        lambda: next((n for _, w in h.world.routes for n, v in w.items() if n != old and v), None),
        message="some traffic on the pending cluster",
    )
    h.world.edit(rayClusterConfig=original)
    await h.spec_changed()
    for _ in range(3):
        await env.sleep(timedelta(seconds=31))
    await eventually(lambda: pending not in h.world.clusters, message="pending deleted")
    rolling = [
        c
        for s in h.world.written
        for c in s.conditions or []
        if c.type == "RollbackInProgress" and c.status == "True"
    ]
    assert rolling and {c.reason for c in rolling} == {"DesiredClusterSpecChanged"}
    assert rolling[0].message == "Goal state reverted to original cluster, rolling back."
    await eventually(
        lambda: h.world.condition("UpgradeInProgress") == ("False", "NoPendingCluster"),
        message="the upgrade over",
    )
    assert h.world.condition("RollbackInProgress") is None
    assert h.world.routes[-1][1] == {old: 100, pending: 0}
    assert h.world.active() == old and list(h.world.clusters) == [old]


async def test_a_pending_cluster_that_never_gets_ready_aborts_at_its_deadline(
    make: Any, env: WorkflowEnvironment
) -> None:
    h = await make(SPEC)
    await h.start(ready_timeout=timedelta(minutes=10))
    old = await h.ready()
    h.world.auto_ready = False
    h.world.edit_cluster(rayVersion="2.50.0")
    await h.spec_changed()
    await eventually(lambda: len(h.world.created) == 2)
    await env.sleep(timedelta(minutes=11))
    await eventually(
        lambda: h.world.condition("UpgradeInProgress") == ("False", "UpgradeAborted"),
        message="the upgrade aborted",
    )
    (event,) = [e for e in h.world.events if e.reason == "UpgradeAborted"]
    assert event.type == "Warning" and "not ready within" in event.message
    assert list(h.world.clusters) == [old] and h.world.serving() == old


def _message(world: FakeServiceWorld, kind: str) -> str:
    found = [c for c in (world.status.conditions or []) if c.type == kind] if world.status else []
    return found[0].message if found else ""


async def test_an_upgrade_without_the_gateway_api_says_so_and_aborts_at_its_deadline(
    make: Any, env: WorkflowEnvironment
) -> None:
    """Switching to incremental upgrades where no Gateway API CRDs exist: a clear status."""
    h = await make(SPEC)
    await h.start(ready_timeout=timedelta(minutes=10))
    old = await h.ready()
    h.world.gateway_api = False
    h.world.edit(**{k: v for k, v in INCREMENTAL.items() if k != "serveConfigV2"})
    await h.spec_changed()
    await eventually(
        lambda: "Gateway API CRDs are not installed" in _message(h.world, "UpgradeInProgress"),
        message="the blocked upgrade in the status",
    )
    assert h.world.condition("UpgradeInProgress") == ("True", "BothActivePendingClustersExist")
    assert h.world.condition("Ready") == ("True", "NonZeroServeEndpoints")

    async def waits_for_the_gateway_api() -> bool:
        # The status is written by an activity before the workflow records what it waits for.
        return any("Gateway API" in w for w in (await h.progress()).waiting_for)

    await eventually(waits_for_the_gateway_api, message="the query names the Gateway API")
    await env.sleep(timedelta(minutes=11))
    await eventually(
        lambda: h.world.condition("UpgradeInProgress") == ("False", "UpgradeAborted"),
        message="the upgrade aborted",
    )
    assert "Gateway API did not appear within 0:10:00" in _message(h.world, "UpgradeInProgress")
    (event,) = [e for e in h.world.events if e.reason == "UpgradeAborted"]
    assert event.type == "Warning" and "Gateway API CRDs are not installed" in event.message
    assert list(h.world.clusters) == [old] and h.world.serving() == old
    assert h.world.routes == []


async def test_a_first_incremental_deployment_waits_for_the_gateway_api(
    make: Any, env: WorkflowEnvironment
) -> None:
    h = await make(INCREMENTAL)
    h.world.gateway_api = False
    await h.start()
    await eventually(
        lambda: "Gateway API CRDs are not installed" in _message(h.world, "Ready"),
        message="the blocked deployment in the status",
    )
    assert h.world.condition("Ready") == ("False", "Initializing")
    h.world.gateway_api = True  # someone installs the CRDs
    await env.sleep(timedelta(seconds=31))
    active = await h.ready()
    assert h.world.routes[-1][1] == {active: 100}
    assert "blocked" not in _message(h.world, "UpgradeInProgress")


async def test_initializing_timeout_is_terminal(make: Any, env: WorkflowEnvironment) -> None:
    h = await make(SPEC, auto_ready=False)
    h.world.annotations["ray.io/initializing-timeout"] = "5m"
    await h.start()
    await eventually(lambda: h.world.created)
    await env.sleep(timedelta(minutes=6))
    await eventually(lambda: h.world.condition("Ready") == ("False", "InitializingTimeout"))
    assert any(e.reason == "RayServiceInitializingTimeout" for e in h.world.events)
    await env.sleep(timedelta(seconds=61))
    await eventually(lambda: not h.world.clusters, message="the cluster cleaned up")
    assert len(h.world.created) == 1


async def test_suspend_and_resume(make: Any) -> None:
    h = await make(SPEC)
    await h.start()
    await h.ready()
    await h.signal(messages.SUSPEND, messages.UserRequest(reason="test"))
    await eventually(lambda: not h.world.clusters, message="clusters deleted")
    deleting = ("True", "SuspendInProgress")
    await eventually(lambda: h.world.condition("Suspending") == deleting)
    await h.nudge()  # the bridge reports the clusters gone
    await eventually(lambda: h.world.condition("Suspended") == ("True", "SuspendComplete"))
    assert not h.world.clusters and h.world.spec["suspend"] is True
    await h.signal(messages.RESUME, messages.UserRequest(reason="test"))
    await eventually(lambda: h.world.condition("Ready") == ("True", "NonZeroServeEndpoints"))
    assert len(h.world.created) == 2


async def test_signals_typed_in_the_ui_act_or_are_refused(make: Any) -> None:
    h = await make(SPEC)
    await h.start()
    await h.ready()
    await h.send_as_typed(messages.ROLLBACK, ["x"])
    await h.send_as_typed(messages.SUSPEND, "now")

    def invalid() -> list[Any] | None:
        found = [e for e in h.world.events if e.reason == "InvalidSignal"]
        return found if len(found) == 2 else None

    refused = await eventually(invalid, message="two refusals")
    assert {e.message.split(":")[0] for e in refused} == {
        "signal rollback refused",
        "signal suspend refused",
    }
    await h.send_as_typed(messages.SUSPEND)
    await eventually(lambda: not h.world.clusters, message="clusters deleted")
    await h.nudge()
    await eventually(lambda: h.world.condition("Suspended") == ("True", "SuspendComplete"))
    await h.send_as_typed(messages.RESUME, {"reason": "back", "requested_by": "ops"})
    await eventually(lambda: h.world.condition("Ready") == ("True", "NonZeroServeEndpoints"))
    assert await h.task_failures() == 0


async def test_deletion_deletes_clusters_and_ends_the_workflow(
    make: Any, env: WorkflowEnvironment
) -> None:
    h = await make(SPEC)
    handle = await h.start()
    await h.ready()
    h.world.deleted_at = await env.get_current_time()
    await h.signal(messages.DELETED, messages.Deleted(gone=False))
    assert "is gone" in await handle.result()
    assert not h.world.clusters and not h.world.exists


async def test_continue_as_new_keeps_the_deletion_deadline(
    make: Any, env: WorkflowEnvironment
) -> None:
    h = await make(SPEC)
    handle = await h.start(max_history_events=60)
    old = await h.ready()
    h.world.edit_cluster(rayVersion="2.50.0")
    await h.spec_changed()
    await eventually(lambda: h.world.active() not in (None, old))
    promoted_at = await env.get_current_time()
    for _ in range(6):
        await h.nudge()
    await eventually(lambda: _continued(handle), message="a continued run")
    assert old in h.world.clusters
    await env.sleep(timedelta(seconds=70))
    (name, at), *_ = await eventually(lambda: h.world.deleted)
    assert name == old and at - promoted_at <= timedelta(seconds=65)


async def _continued(handle: WorkflowHandle[Any, Any]) -> bool:
    described = await handle.describe()
    return described.run_id != handle.first_execution_run_id


async def test_apps_lost_by_the_active_cluster_are_noticed_without_a_signal(
    make: Any, env: WorkflowEnvironment
) -> None:
    """A head restarted without GCS FT: no watch reports Serve, so the workflow looks again."""
    h = await make(SPEC)
    await h.start()
    active = await h.ready()
    h.world.auto_ready = False
    h.world.clusters[active].apps = {}  # the head came back empty
    await h.nudge()  # the bridge reports the new head pod; nothing reports Serve
    await eventually(lambda: len(h.world.clusters[active].applied) == 2)
    assert h.world.clusters[active].apps == {"app1": "DEPLOYING"}
    h.world.flip_ready(active)  # Serve finished deploying: no signal for that
    await env.sleep(timedelta(seconds=20))
    ready = ("True", "NonZeroServeEndpoints")
    await eventually(lambda: h.world.condition("Ready") == ready and h.world.status, within=10)
    assert h.world.status is not None
    apps = (h.world.status.active_service_status or RayServiceStatus()).applications or {}
    assert apps["app1"].status == "RUNNING"
