"""The bridge against devcluster and a real Temporal dev server (workflows are stand-ins)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from activities.kube import client as kube
from activities.kube.errors import KubeError
from bridge.running import Bridge
from bridge.signalling import Signaller
from bridge.targets import RAYCLUSTER
from devcluster.faults import Faults
from tests.bridge.conftest import Stack
from tests.bridge.standin import Seen
from tests.eventually import eventually, when
from workflows import messages

pytestmark = pytest.mark.timeout(240)


async def new_namespace(stack: Stack) -> str:
    name = f"t{uuid.uuid4().hex[:8]}"
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    await stack.kube.create(kube.Resource("", "v1", "namespaces", False), None, ns)
    return name


@contextlib.asynccontextmanager
async def running_bridge(stack: Stack, namespace: str, **options: Any) -> AsyncIterator[Bridge]:
    bridge = Bridge(
        stack.kube,
        Signaller(stack.env.client, stack.task_queue),
        namespaces=[namespace],
        window=0.05,
        **options,
    )
    task = asyncio.create_task(bridge.run())
    try:
        await asyncio.wait_for(bridge.wait_listed(), 30)
        yield bridge
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def executions(stack: Stack, namespace: str) -> Counter[str]:
    """Workflow id → number of executions (open or closed) in a namespace's CRs."""
    found: Counter[str] = Counter()
    async for wf in stack.env.client.list_workflows(f"RayNamespace='{namespace}'"):
        found[wf.id] += 1
    return found


async def seen(stack: Stack, workflow_id: str) -> Seen:
    handle = stack.env.client.get_workflow_handle(workflow_id)
    return await handle.query("seen", result_type=Seen)


async def generations(stack: Stack, namespace: str) -> dict[str, int]:
    """Workflow id → the CR's current generation, from the API."""
    items = await stack.kube.list_all(kube.RAYCLUSTERS, namespace)
    return {
        f"raycluster/{namespace}/{i['metadata']['name']}/{i['metadata']['uid']}": int(
            i["metadata"]["generation"]
        )
        for i in items
    }


async def caught_up(stack: Stack, namespace: str) -> bool:
    """Every CR's workflow knows its latest generation."""
    wanted = await _retrying(lambda: generations(stack, namespace))
    for workflow_id, generation in wanted.items():
        try:
            if (await seen(stack, workflow_id)).generation != generation:
                return False
        except (RPCError, WorkflowQueryFailedError):  # not started yet
            return False
    return True


async def test_crs_created_while_the_bridge_is_down_get_one_workflow_each(stack: Stack) -> None:
    namespace = await new_namespace(stack)
    await asyncio.gather(*(stack.create_cluster(f"c{i}", namespace) for i in range(200)))
    async with running_bridge(stack, namespace):
        await eventually(lambda: caught_up(stack, namespace), within=60, message="200 workflows")
        counted = await eventually(
            lambda: when(executions(stack, namespace), lambda c: len(c) == 200),
            within=30,
            message="200 workflows listed",
        )
    assert set(counted.values()) == {1}


async def _ids(stack: Stack, query: str) -> list[str]:
    return [wf.id async for wf in stack.env.client.list_workflows(query)]


async def test_a_recreated_cr_gets_a_new_workflow_and_the_old_one_ends(stack: Stack) -> None:
    namespace = await new_namespace(stack)
    first = await stack.create_cluster("again", namespace)
    async with running_bridge(stack, namespace):
        old_id = f"raycluster/{namespace}/again/{first['metadata']['uid']}"
        await eventually(lambda: caught_up(stack, namespace), message="first workflow")
        # Started in its kind's first state: the workflow's first pass need not upsert it.
        query = f"RayNamespace='{namespace}' AND RayState='provisioning'"
        listed = await eventually(
            lambda: when(_ids(stack, query), bool), message="listed as provisioning"
        )
        assert listed == [old_id]
        # Started to follow its kind's newest patches: its first task records no patch marker.
        started = await seen(stack, old_id)
        assert started.patches == messages.COVERING_PATCHES["RayCluster"]
        await stack.kube.delete(kube.RAYCLUSTERS, namespace, "again")
        second = await stack.create_cluster("again", namespace)
        new_id = f"raycluster/{namespace}/again/{second['metadata']['uid']}"
        handle = stack.env.client.get_workflow_handle(old_id, result_type=Seen)
        result = await handle.result()
        assert result.gone
        await eventually(lambda: caught_up(stack, namespace), message="second workflow")
    assert new_id != old_id


async def test_a_cr_deleted_while_no_bridge_runs_ends_its_workflow(stack: Stack) -> None:
    """A restarted bridge has no memory of its own: it learns the running CRs from Temporal.

    Found by the chaos suite: without this a workflow whose CR went while the bridge was
    down waited for its 5-minute resync to notice.
    """
    namespace = await new_namespace(stack)
    created = await stack.create_cluster("gone-while-down", namespace)
    workflow_id = f"raycluster/{namespace}/gone-while-down/{created['metadata']['uid']}"
    async with running_bridge(stack, namespace):
        await eventually(lambda: caught_up(stack, namespace), message="the workflow")
    await stack.kube.delete(kube.RAYCLUSTERS, namespace, "gone-while-down")
    async with running_bridge(stack, namespace):
        handle = stack.env.client.get_workflow_handle(workflow_id, result_type=Seen)
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.gone


async def test_status_writes_do_not_reach_temporal(stack: Stack) -> None:
    namespace = await new_namespace(stack)
    await stack.create_cluster("quiet", namespace)
    async with running_bridge(stack, namespace):
        await eventually(lambda: caught_up(stack, namespace))
        (workflow_id,) = await generations(stack, namespace)
        before = (await seen(stack, workflow_id)).signals
        for state in ("a", "b", "c"):
            patch = {"status": {"state": state}}
            await stack.kube.patch(kube.RAYCLUSTERS, namespace, "quiet", patch, sub="status")
        await stack.bump("quiet", 7, namespace)
        await eventually(lambda: caught_up(stack, namespace), message="the spec change")
        after = (await seen(stack, workflow_id)).signals
    assert after == before + 1


# Every watch of RayClusters is held back 1.5 s and cut after 1 s, and devcluster keeps only
# 20 events of history: a burst of changes in between makes the resumed watch too old.
EXPIRING_WATCHES = Faults.from_data(
    {
        "rules": [
            {"verbs": ["watch"], "resources": ["rayclusters"], "action": "cut", "seconds": 1},
            {"verbs": ["watch"], "resources": ["rayclusters"], "action": "delay", "seconds": 1.5},
        ]
    }
)


@pytest.mark.parametrize(
    "devcluster",
    [{"history_limit": 20, "faults": EXPIRING_WATCHES}],
    indirect=True,
    ids=["expiring-watches"],
)
async def test_an_expired_watch_relists_without_missing_a_change(stack: Stack) -> None:
    namespace = await new_namespace(stack)
    await asyncio.gather(*(stack.create_cluster(f"c{i}", namespace) for i in range(10)))
    async with running_bridge(stack, namespace) as bridge:
        watcher = next(w for w in bridge.watchers if w.target.kind == "RayCluster")
        for round_ in range(100):
            await asyncio.gather(*(stack.bump(f"c{i}", round_ + 3, namespace) for i in range(10)))
            if watcher.stats.gone:
                break
            await asyncio.sleep(0.1)  # pacing the writer, not synchronisation
        assert watcher.stats.gone >= 1, "the watch never expired"
        await eventually(lambda: caught_up(stack, namespace), within=60, message="every change")


FLAKY_API = Faults.from_data(
    {"seed": 5, "rules": [{"share": 0.05, "action": "error", "code": 500}]}
)


@pytest.mark.parametrize("devcluster", [{"faults": FLAKY_API}], indirect=True, ids=["5%-500s"])
async def test_failing_requests_change_nothing_in_the_outcome(stack: Stack) -> None:
    namespace = await _retrying(lambda: new_namespace(stack))
    for i in range(20):
        await _retrying(lambda i=i: stack.create_cluster(f"c{i}", namespace))
    async with running_bridge(stack, namespace):
        for i in range(20):
            await _retrying(lambda i=i: stack.bump(f"c{i}", 9, namespace))
        await eventually(lambda: caught_up(stack, namespace), within=60, message="all caught up")


async def _retrying(call: Any) -> Any:
    """The test's own writes retry injected 500s, as any client would."""
    for _ in range(20):
        try:
            return await call()
        except KubeError as err:
            if err.status != 500:
                raise
    raise AssertionError("20 injected failures in a row")


async def test_two_bridges_never_start_a_workflow_twice(stack: Stack) -> None:
    namespace = await new_namespace(stack)
    await asyncio.gather(*(stack.create_cluster(f"c{i}", namespace) for i in range(30)))
    async with running_bridge(stack, namespace), running_bridge(stack, namespace):
        for i in range(30):
            await stack.bump(f"c{i}", 5, namespace)
        await eventually(lambda: caught_up(stack, namespace), within=60)
        counted = await eventually(
            lambda: when(executions(stack, namespace), lambda c: len(c) == 30), within=30
        )
    assert set(counted.values()) == {1}


async def test_kill_9_during_a_burst_loses_nothing(stack: Stack, tmp_path: Any) -> None:
    namespace = await new_namespace(stack)
    names = [f"c{i}" for i in range(50)]
    await asyncio.gather(*(stack.create_cluster(n, namespace) for n in names))
    env = {
        **os.environ,
        "KUBECONFIG": str(stack.cluster.kubeconfig_path),
        "TEMPORAL_ADDRESS": stack.env.client.service_client.config.target_host,
        "KUBERAY_TEMPORAL_TASK_QUEUE": stack.task_queue,
        "KUBERAY_TEMPORAL_WATCH_NAMESPACES": namespace,
    }
    command = [sys.executable, "-m", "kuberay_temporal", "bridge"]
    bridge = await asyncio.create_subprocess_exec(
        *command, env=env, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        burst = asyncio.create_task(_burst(stack, namespace, names, rounds=20))  # 1,000 changes
        await eventually(lambda: _started(stack, namespace, 10), within=60, message="workflows")
        bridge.send_signal(signal.SIGKILL)
        await bridge.wait()
        await burst
        bridge = await asyncio.create_subprocess_exec(
            *command, env=env, stderr=asyncio.subprocess.DEVNULL
        )
        await eventually(
            lambda: caught_up(stack, namespace), within=90, message="final generations"
        )
        counted = await eventually(
            lambda: when(executions(stack, namespace), lambda c: len(c) == 50), within=30
        )
        assert set(counted.values()) == {1}
    finally:
        if bridge.returncode is None:
            bridge.kill()
            await bridge.wait()


async def _burst(stack: Stack, namespace: str, names: list[str], rounds: int) -> None:
    for round_ in range(rounds):
        await asyncio.gather(*(stack.bump(n, 10 + round_, namespace) for n in names))


async def _started(stack: Stack, namespace: str, at_least: int) -> bool:
    return len(await executions(stack, namespace)) >= at_least


async def test_an_ignored_namespace_never_reaches_a_workflow(stack: Stack) -> None:
    """KubeRay's own operator may reconcile one namespace; the bridge leaves it alone."""
    ours, theirs = await new_namespace(stack), await new_namespace(stack)
    left_alone = await stack.create_cluster("beside", theirs)
    async with running_bridge(stack, ours, ignored=frozenset({theirs})) as bridge:
        # The same watcher would see both, as one watching every namespace does.
        bridge._on_event(RAYCLUSTER, "ADDED", left_alone)
        await stack.create_cluster("mine", ours)
        await eventually(lambda: caught_up(stack, ours), message="our workflow")
    assert len(await executions(stack, ours)) == 1
    assert await executions(stack, theirs) == Counter()


def controller(kind: str, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": kind, "name": name, "uid": uid, "controller": True}


def worker_pod(namespace: str, name: str, owner: dict[str, Any]) -> dict[str, Any]:
    """A Ray worker pod as the bridge watches it, naming `owner` as its controller."""
    labels = {"ray.io/node-type": "worker"}
    meta = {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": [owner]}
    containers = [{"name": "ray-worker", "image": "rayproject/ray"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": containers}}


async def pod_come_and_gone(stack: Stack, namespace: str, name: str, owner: dict[str, Any]) -> None:
    """A Ray worker pod created and deleted: its deletion is news to the CR it names."""
    await stack.kube.create(kube.PODS, namespace, worker_pod(namespace, name, owner))
    # The garbage collector may have deleted it already, its owner being nowhere.
    await stack.kube.delete(kube.PODS, namespace, name, grace_period_seconds=0)


async def test_pods_naming_a_cr_that_does_not_exist_start_no_workflow(stack: Stack) -> None:
    """Anyone who may create a pod in a namespace writes its ownerReferences: one naming a CR
    the bridge has not seen (another uid, another kind) reaches no workflow, and delivers none
    that fails forever."""
    namespace = await new_namespace(stack)
    real = await stack.create_cluster("real", namespace)
    uid = real["metadata"]["uid"]
    real_id = f"raycluster/{namespace}/real/{uid}"
    async with running_bridge(stack, namespace) as bridge:
        await eventually(lambda: caught_up(stack, namespace), message="the real workflow")
        claims = [("RayCluster", "ghost", str(uuid.uuid4())), ("RayCluster", "real", "forged")]
        claims.append(("RayFoo", "real", uid))
        for i, claim in enumerate(claims):
            await pod_come_and_gone(stack, namespace, f"forged-{i}", controller(*claim))
        # Down the same watch after theirs: once its news is delivered, theirs would be too.
        await pod_come_and_gone(stack, namespace, "honest", controller("RayCluster", "real", uid))

        async def honest_news_delivered() -> bool:
            return (await seen(stack, real_id)).owned > 0 and bridge.coalescer.idle

        await eventually(honest_news_delivered, message="the honest pod's news, nothing pending")
    assert await executions(stack, namespace) == Counter({real_id: 1})


# Every list of RayClusters is held back: a restarted bridge's pods would be listed first.
SLOW_CLUSTER_LISTS = Faults.from_data(
    {"rules": [{"verbs": ["list"], "resources": ["rayclusters"], "action": "delay", "seconds": 1}]}
)


@pytest.mark.parametrize(
    "devcluster", [{"faults": SLOW_CLUSTER_LISTS}], indirect=True, ids=["slow-cluster-lists"]
)
async def test_a_restarted_bridge_tells_a_cluster_of_its_pods_listed_before_it(
    stack: Stack,
) -> None:
    """A pod that changed while no bridge ran is news to its RayCluster, whichever list of a
    restarted bridge's comes back first: pods are judged only once every CR is known."""
    namespace = await new_namespace(stack)
    created = await stack.create_cluster("c", namespace)
    uid = created["metadata"]["uid"]
    workflow_id = f"raycluster/{namespace}/c/{uid}"
    async with running_bridge(stack, namespace):
        await eventually(lambda: caught_up(stack, namespace), message="the workflow")
    owner = controller("RayCluster", "c", uid)
    await stack.kube.create(kube.PODS, namespace, worker_pod(namespace, "c-worker", owner))
    running = {"status": {"phase": "Running", "podIP": "10.244.0.9"}}
    await stack.kube.patch(kube.PODS, namespace, "c-worker", running, sub="status")
    assert (await seen(stack, workflow_id)).owned == 0
    async with running_bridge(stack, namespace):
        await eventually(
            lambda: when(seen(stack, workflow_id), lambda s: s.owned > 0),
            message="the running pod's news",
        )


# RayCronJobs can never be listed, as on a cluster whose CRDs predate the kind.
NO_CRONJOB_LISTS = Faults.from_data(
    {"rules": [{"verbs": ["list"], "resources": ["raycronjobs"], "action": "error", "code": 500}]}
)


@pytest.mark.parametrize(
    "devcluster", [{"faults": NO_CRONJOB_LISTS}], indirect=True, ids=["no-cronjob-lists"]
)
async def test_pods_are_watched_while_a_kind_that_owns_none_cannot_be_listed(
    stack: Stack,
) -> None:
    namespace = await new_namespace(stack)
    created = await stack.create_cluster("c", namespace)
    uid = created["metadata"]["uid"]
    workflow_id = f"raycluster/{namespace}/c/{uid}"
    bridge = Bridge(
        stack.kube, Signaller(stack.env.client, stack.task_queue), [namespace], window=0.05
    )
    task = asyncio.create_task(bridge.run())
    try:
        await eventually(lambda: caught_up(stack, namespace), message="the workflow")
        owner = controller("RayCluster", "c", uid)
        await stack.kube.create(kube.PODS, namespace, worker_pod(namespace, "c-worker", owner))
        running = {"status": {"phase": "Running", "podIP": "10.244.0.9"}}
        await stack.kube.patch(kube.PODS, namespace, "c-worker", running, sub="status")
        await eventually(
            lambda: when(seen(stack, workflow_id), lambda s: s.owned > 0),
            message="the running pod's news",
        )
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
