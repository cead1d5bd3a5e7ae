"""`kuberay-temporal status|ls|signal` against a real dev server and a RayCluster workflow.

The workflow runs with the in-memory cluster of the workflow tests behind its activities;
the CLI runs as a real subprocess, as a person would run it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest_asyncio
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from crds.refs import ObjectRef
from tests.eventually import eventually
from tests.workflows.raycluster.fake_cluster import FakeCluster
from tests.workflows.raycluster.test_workflow import SPEC
from worker.running import build_workflow_runner
from workflows.messages import RAY_KIND, RAY_NAME, RAY_NAMESPACE
from workflows.raycluster.state import RayClusterInput
from workflows.raycluster.workflow import RayClusterWorkflow


@dataclass
class Cli:
    address: str
    queue: str

    async def __call__(self, *args: str, address: str | None = None) -> tuple[int, str, str]:
        env = {
            **os.environ,
            "TEMPORAL_ADDRESS": address or self.address,
            "KUBERAY_TEMPORAL_TASK_QUEUE": self.queue,
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kuberay_temporal",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()


@pytest_asyncio.fixture
async def running(
    local_env: WorkflowEnvironment, task_queue: str
) -> AsyncIterator[tuple[Cli, FakeCluster, str]]:
    name = f"c{uuid.uuid4().hex[:6]}"
    cluster = FakeCluster(name, dict(SPEC))
    ref = ObjectRef(kind="RayCluster", namespace="default", name=name, uid=str(uuid.uuid4()))
    async with Worker(
        local_env.client,
        task_queue=task_queue,
        workflows=[RayClusterWorkflow],
        activities=cluster.activities(),
        workflow_runner=build_workflow_runner(),
    ):
        handle = await local_env.client.start_workflow(
            RayClusterWorkflow.run,
            RayClusterInput(ref=ref),
            id=ref.workflow_id,
            task_queue=task_queue,
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(RAY_KIND, "RayCluster"),
                    SearchAttributePair(RAY_NAMESPACE, "default"),
                    SearchAttributePair(RAY_NAME, name),
                ]
            ),
        )
        await eventually(lambda: len(cluster.live()) == 3)
        cluster.make_ready()
        address = local_env.client.service_client.config.target_host
        yield Cli(address, task_queue), cluster, name
        await handle.terminate("test finished")


async def listed(cli: Cli, *args: str) -> str | None:
    code, out, _ = await cli(*args)
    return out if code == 0 and len(out.splitlines()) > 1 else None


async def test_status_shows_state_and_decisions(running: tuple[Cli, FakeCluster, str]) -> None:
    cli, _, name = running
    await eventually(lambda: listed(cli, "ls", "--kind", "RayCluster"), within=20)
    code, out, err = await cli("status", f"raycluster/default/{name}")
    assert code == 0, err
    assert f"RayCluster default/{name}: provisioning" in out
    assert "decided   created" in out


async def test_ls_filters_by_kind_and_state(running: tuple[Cli, FakeCluster, str]) -> None:
    cli, _, name = running
    out = await eventually(lambda: listed(cli, "ls", "--kind", "RayCluster"), within=20)
    assert name in out and out.splitlines()[0].startswith("KIND")
    code, none, _ = await cli("ls", "--kind", "RayJob")
    assert code == 0 and name not in none


async def test_signal_suspend_reaches_the_cr(running: tuple[Cli, FakeCluster, str]) -> None:
    cli, cluster, name = running
    await eventually(lambda: listed(cli, "ls", "--kind", "RayCluster"), within=20)
    code, out, err = await cli("signal", "suspend", f"RayCluster/default/{name}", "--reason", "t")
    assert code == 0, err and "sent suspend" in out
    await eventually(lambda: cluster.spec.get("suspend") is True, message="spec.suspend")


async def test_errors_are_one_clear_line(running: tuple[Cli, FakeCluster, str]) -> None:
    cli, _, name = running
    cases = [
        (("status", "RayCluster/default/nope"), "no running workflow for RayCluster default/nope"),
        (
            ("signal", "rollback", f"RayCluster/default/{name}"),
            "RayCluster does not take 'rollback'",
        ),
        (("status", "RayCluster/nope"), "expected KIND/NAMESPACE/NAME"),
        (("status", "RayThing/a/b"), "unknown kind 'RayThing'"),
    ]
    for args, phrase in cases:
        code, _, err = await cli(*args)
        assert code == 1 and phrase in err and len(err.strip().splitlines()) == 1, err
    code, _, err = await cli("ls", address="127.0.0.1:1")
    assert code == 1 and "cannot reach Temporal at 127.0.0.1:1" in err
    assert "Traceback" not in err
