"""Chaos: `kill -9` of the worker, the bridge, the cluster and the Temporal dev server, at
seeded random moments, while mixed RayCluster, RayJob and RayService lifecycles run.

The cluster is devcluster (killed whole), or a real control plane whose kube-apiserver and
node (devcluster's kubelet) are killed each on its own.

Every component is its own process (see `processes`); each kill is followed by a restart
after a short random outage, one kill at a time, at most `KILLS` kills inside the window in
which the lifecycles start. Afterwards: every lifecycle saw its CR reach the state it should
(see `lifecycles`), Ray created exactly one job per RayJob attempt (counted by the simulated
heads, `counting_devcluster` or `counting_node`), nothing a CR made is left once the CRs are
deleted, and no workflow is still running, ended other than completed, or had a workflow task
fail.

Size and seed come from the environment; CI runs the default small size. The full size:

    KUBERAY_TEMPORAL_CHAOS_LIFECYCLES=200 .venv/bin/pytest tests/chaos/test_chaos.py -s
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.kube import client as kube
from kuberay_temporal.binaries import kubectl
from tests.chaos.counting_devcluster import read_submissions
from tests.chaos.lifecycles import ATTEMPTS, NAMESPACE, Driver, deal, serve_app_configmap, until
from tests.chaos.processes import Stack
from tests.chaos.schedule import plan_kills
from tests.reference import REPO_ROOT

LIFECYCLES = int(os.environ.get("KUBERAY_TEMPORAL_CHAOS_LIFECYCLES", "20"))
SEED = int(os.environ.get("KUBERAY_TEMPORAL_CHAOS_SEED", "1"))
KILLS = max(8, LIFECYCLES // 4)
WINDOW = 3.0 * LIFECYCLES
"""Seconds over which lifecycles start and kills happen."""
STEP_DEADLINE = 300.0
"""How long any one step of a lifecycle may take, outages included."""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(int(600 + 6 * LIFECYCLES))]

UNHANDLED_COMMAND = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND
LEFTOVERS = (kube.RAYSERVICES, kube.RAYJOBS, kube.RAYCLUSTERS, kube.JOBS, kube.PODS, kube.SERVICES)


@pytest.mark.parametrize("control_plane", ["devcluster", "kubernetes"])
async def test_kill_9_of_every_component_loses_nothing(tmp_path: Path, control_plane: str) -> None:
    stack = Stack(tmp_path, control_plane)
    stack.build()
    supervisors: list[asyncio.Task[None]] = []
    client: kube.KubeClient | None = None
    try:
        await stack.start()
        await _kubectl(stack, "apply", "-f", str(REPO_ROOT / "deploy" / "crds"))
        client = await kube.connect(str(stack.kubeconfig))
        await client.create_or_get(kube.CONFIGMAPS, NAMESPACE, serve_app_configmap())
        await stack.start_operator()
        supervisors = [asyncio.create_task(c.supervise()) for c in stack.components.values()]

        plan = deal(SEED, LIFECYCLES)
        kills = plan_kills(SEED, KILLS, WINDOW, stack.targets)
        driver = Driver(client, STEP_DEADLINE)
        began = time.monotonic()

        async def chaos() -> None:
            for kill in kills:
                await asyncio.sleep(max(0.0, began + kill.at - time.monotonic()))
                await stack.kill_and_restart(kill.component, kill.down_for)

        async def lifecycle(index: int, name: str, kind: str) -> Any:
            await asyncio.sleep(index * WINDOW / LIFECYCLES)  # staggered starts, not a wait
            return await driver.run(name, kind)

        killing = asyncio.create_task(chaos())
        outcomes = await asyncio.gather(*(lifecycle(i, n, k) for i, (n, k) in enumerate(plan)))
        await killing
        elapsed = time.monotonic() - began

        failures = [f"{o.name}: {o.failure}" for o in outcomes if o.failure]
        failures += _submission_failures(plan, read_submissions(stack.submission_log))
        failures += await _leftovers(client)
        failures += await _workflow_failures(stack.temporal_address)
        crashes = {n: c.crashes for n, c in stack.components.items() if c.crashes}
        print(
            f"\nchaos: seed {SEED}, {LIFECYCLES} lifecycles "
            f"{dict(Counter(k for _, k in plan))}, {sum(stack.restarts.values())} kills "
            f"{dict(stack.restarts)}, unprompted exits {crashes}, {elapsed:.0f}s, "
            f"failures: {len(failures)}"
        )
        if failures:
            print(_warnings(stack.root))
        assert sum(stack.restarts.values()) == KILLS
        assert not failures, "\n".join(failures)
    finally:
        for task in supervisors:
            task.cancel()
        await asyncio.gather(*supervisors, return_exceptions=True)
        if client is not None:
            await client.close()
        await stack.stop()


def _submission_failures(plan: list[tuple[str, str]], created: list[str]) -> list[str]:
    """Ray must have created each submission id once, one per attempt of each RayJob."""
    counts = Counter(created)
    failures = [f"Ray created job {s} {n} times" for s, n in counts.items() if n > 1]
    for name, kind in plan:
        if kind not in ATTEMPTS:
            continue
        ids = sorted(s for s in counts if s.startswith(f"{name}-"))
        if len(ids) != ATTEMPTS[kind]:
            failures.append(f"{name}: Ray has jobs {ids}, expected {ATTEMPTS[kind]}")
    return failures


async def _leftovers(client: kube.KubeClient) -> list[str]:
    """Once every CR is deleted, nothing they made may remain (waited for, with a deadline)."""

    async def remaining() -> list[str]:
        found = []
        for resource in LEFTOVERS:
            for item in await client.list_all(resource, NAMESPACE):
                name = item["metadata"]["name"]
                if not (resource is kube.SERVICES and name == "kubernetes"):
                    found.append(f"{resource.plural}/{name} {_described(item)}")
        return found

    async def clean() -> bool:
        return not await remaining()

    try:
        await until(clean, 120, "namespace free of CRs and what they made")
    except Exception:
        return [f"orphaned: {', '.join(await remaining())}"]
    return []


def _warnings(root: Path, last: int = 30) -> str:
    """The last warnings and errors each component logged, to explain a failure."""
    parts = []
    for log in sorted(root.glob("*.log")):
        lines = [line for line in log.read_text(errors="replace").splitlines() if _warning(line)]
        parts.append(f"--- {log.name}: {len(lines)} warnings or errors")
        parts += lines[-last:]
    return "\n".join(parts)


def _warning(line: str) -> bool:
    return any(level in line for level in (" WARNING ", " ERROR ", " CRITICAL "))


def _described(item: dict[str, Any]) -> str:
    """What explains a leftover: who owns it, whether it is being deleted, and its phase."""
    meta = item["metadata"]
    owners = [f"{o['kind']}/{o['name']} {o['uid'][:8]}" for o in meta.get("ownerReferences", [])]
    return str(
        {
            "uid": meta.get("uid", "")[:8],
            "owners": owners,
            "deletionTimestamp": meta.get("deletionTimestamp"),
            "finalizers": meta.get("finalizers"),
            "phase": item.get("status", {}).get("phase"),
            "node": item.get("spec", {}).get("nodeName"),
        }
    )


async def _workflow_failures(address: str) -> list[str]:
    """Every workflow ended completed, none still runs, no workflow task ever failed."""
    temporal = await Client.connect(address, data_converter=pydantic_data_converter)

    async def settled() -> list[Any] | None:
        executions = [w async for w in temporal.list_workflows()]
        running = [w for w in executions if w.status == WorkflowExecutionStatus.RUNNING]
        return None if running else executions

    try:
        executions = await until(settled, 120, "every workflow finished", every=2.0)
    except Exception:
        query = "ExecutionStatus='Running'"
        return [f"still running: {w.id}" async for w in temporal.list_workflows(query)]
    failures = [
        f"workflow {w.id} ended {w.status}"
        for w in executions
        if w.status
        not in (WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.CONTINUED_AS_NEW)
    ]
    for w in executions:
        history = await temporal.get_workflow_handle(w.id, run_id=w.run_id).fetch_history()
        # UnhandledCommand is Temporal refusing a completion because a signal came in during
        # the task; the SDK runs the task again with the signal. Any other cause is a bug.
        failed = [
            e
            for e in history.events
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
            and e.workflow_task_failed_event_attributes.cause != UNHANDLED_COMMAND
        ]
        if failed:
            failures.append(f"workflow {w.id}: {len(failed)} workflow task failures")
    return failures


async def _kubectl(stack: Stack, *args: str) -> None:
    process = await asyncio.create_subprocess_exec(
        str(kubectl()),
        f"--kubeconfig={stack.kubeconfig}",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
    )
    assert await asyncio.wait_for(process.wait(), 60) == 0
