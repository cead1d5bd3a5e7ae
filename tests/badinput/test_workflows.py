"""Bad input at the workflow level, on the time-skipping server with one real worker.

(d) An object our gate rejects ends in KubeRay's refusal state, with the broken field's path in
    the message: RayJob `jobDeploymentStatus: ValidationFailed`, RayService `Ready=False` with
    reason ValidationFailed, RayCluster a Warning Event `InvalidRayClusterSpec` (or
    `InvalidRayClusterMetadata` for a bad name; KubeRay writes no status for an invalid
    RayCluster). The workflow keeps running without a failed workflow
    task, and nothing is created: no RayCluster, pod, Service, submitter or Ray job.
(e) In the same worker, valid CRs of all three kinds reach ready/Complete while invalid ones
    are refused beside them.

Kubernetes and Ray are replaced at the activity boundary by the fake worlds of
`tests/workflows` (see `worlds.py`); the workflows and the worker are the real ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest_asyncio
from hypothesis import assume, example, given
from hypothesis import strategies as st
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from crds.enums import JobStatus
from runtime.settings import Settings
from tests.badinput.budget import MIXED, WORKFLOW
from tests.badinput.objects import JSON, admit, our_verdict, path_matches
from tests.badinput.strategies import Broken, broken_objects
from tests.badinput.worlds import Router, StoredCluster, StoredJob, StoredService
from tests.eventually import eventually
from tests.time_skipping import start_time_skipping
from tests.workflows.raycluster.test_workflow import SPEC as CLUSTER_SPEC
from tests.workflows.rayjob.test_workflow import job_spec
from tests.workflows.rayservice.test_workflow import SPEC as SERVICE_SPEC
from worker.running import build_worker
from workflows import messages
from workflows.raycluster.state import RayClusterInput
from workflows.rayjob.state import RayJobInput
from workflows.rayservice.state import RayServiceInput

WORKFLOW_KINDS = ("RayCluster", "RayJob", "RayService")
"""The kinds this module's worlds serve (a RayCronJob's workflow keeps a Temporal Schedule,
tested with its own fake in tests/workflows/raycronjob)."""
_INPUTS: dict[str, Any] = {
    "RayCluster": RayClusterInput,
    "RayJob": RayJobInput,
    "RayService": RayServiceInput,
}


@dataclass
class Stack:
    """One time-skipping server and one worker (every workflow, every activity) per module."""

    env: WorkflowEnvironment
    router: Router
    queue: str
    worker: Worker

    async def start(self, doc: JSON) -> tuple[WorkflowHandle[Any, Any], Any]:
        ref, world = self.router.add(doc)
        handle = await self.env.client.start_workflow(
            ref.kind,
            _INPUTS[ref.kind](ref=ref),
            id=ref.workflow_id,
            task_queue=self.queue,
        )
        return handle, world


@pytest_asyncio.fixture(scope="module")
async def stack() -> AsyncIterator[Stack]:
    env = await start_time_skipping()
    router = Router()
    queue = f"badinput-{uuid.uuid4()}"
    worker = build_worker(env.client, Settings(task_queue=queue), router.activities())
    async with worker:
        yield Stack(env, router, queue, worker)
    await env.shutdown()


# --- what a refusal looks like, per kind ------------------------------------------------------


def refusal(world: Any) -> str | None:
    """The message of the world's ValidationFailed outcome, None while there is none."""
    if isinstance(world, StoredCluster):
        refused = [e for e in world.events if e.reason.startswith("InvalidRayCluster")]
        assert all(e.type == "Warning" for e in refused)
        return refused[0].message if refused else None
    if isinstance(world, StoredJob):
        status = world.status
        if status is None or world.state != "ValidationFailed":
            return None
        assert status.reason == "ValidationFailed"
        return status.message or ""
    assert isinstance(world, StoredService)
    for cond in (world.status.conditions or []) if world.status else []:
        if cond.type == "Ready" and cond.status == "False" and cond.reason == "ValidationFailed":
            return cond.message
    return None


def created_anything(world: Any) -> list[str]:
    """What the workflow made for a CR it should have refused."""
    if isinstance(world, StoredCluster):
        made = list(world.created) + ([world.head_service.name] if world.head_service else [])
        return made
    if isinstance(world, StoredJob):
        submitters = ["submitter"] * world.submitters_created
        return list(world.created_clusters) + submitters + list(world.submissions)
    return list(world.created) + [s for s in (world.head_svc, world.serve_svc) if s]


async def workflow_task_failures(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """Failed workflow tasks (an exception in workflow code: the workflow is stuck)."""
    found = []
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            found.append(event.workflow_task_failed_event_attributes.failure.message)
    return found


async def assert_refused(handle: WorkflowHandle[Any, Any], world: Any, expected: str) -> None:
    """The CR ends ValidationFailed naming `expected`; the workflow runs on; nothing made."""
    try:
        message = await eventually(lambda: refusal(world), message="ValidationFailed")
    except AssertionError as err:
        status = (await handle.describe()).status
        failures = await workflow_task_failures(handle)
        raise AssertionError(f"{err}; workflow {status}, failed tasks: {failures}") from None
    assert expected in message, f"{expected!r} not named in {message!r}"
    assert created_anything(world) == []
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    assert await workflow_task_failures(handle) == []


def refused_by_us(broken: Broken) -> JSON:
    """The object as the API server stores it, when our gate rejects it at the broken field.

    Objects only the CRD schema rejects never reach a workflow. Objects both reject reach it
    when the CRD installed is looser than ours (KubeRay's own, an older release's); metadata
    that does not decode as ObjectMeta never does, whatever the CRD.
    """
    admission = admit(broken.doc)
    assume(not admission.undecodable)
    stored = admission.stored
    assume(isinstance(stored.get("metadata"), dict) and stored["metadata"].get("name"))
    assume(isinstance(stored["metadata"]["name"], str))
    assume(any(path_matches(v.path, broken.expected) for v in our_verdict(stored)))
    return stored


async def _terminate(*handles: WorkflowHandle[Any, Any]) -> None:
    # Entity workflows never end on their own; a leftover one keeps the server's clock busy.
    for handle in handles:
        with contextlib.suppress(RPCError):
            await handle.terminate("example finished")


def _without_spec(kind: str) -> JSON:
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": {"name": "no-spec"}}


def _valid(kind: str, spec: JSON) -> JSON:
    name = f"ok{uuid.uuid4().hex[:6]}"
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


# --- (d) --------------------------------------------------------------------------------------


async def _invalid_is_refused(stack: Stack, broken: Broken) -> None:
    stored = refused_by_us(broken)
    handle, world = await stack.start(stored)
    try:
        await assert_refused(handle, world, broken.expected)
        if isinstance(world, StoredCluster):
            # KubeRay's reasons: metadata is checked before the spec.
            part = "Metadata" if broken.expected.startswith("metadata") else "Spec"
            assert world.events[0].reason == f"InvalidRayCluster{part}"
    finally:
        await _terminate(handle)


@WORKFLOW
@given(broken_objects(("RayCluster",)))
# Regression: a bad name was reported as InvalidRayClusterSpec, not KubeRay's Metadata reason.
@example(
    Broken(
        doc={**_valid("RayCluster", copy.deepcopy(CLUSTER_SPEC)), "metadata": {"name": "1abc"}},
        expected="metadata.name",
        mutation="bad-name",
    )
)
async def test_an_invalid_raycluster_is_refused_by_a_warning_event(
    stack: Stack, broken: Broken
) -> None:
    await _invalid_is_refused(stack, broken)


@WORKFLOW
@given(broken_objects(("RayJob",)))
# Regression: a RayJob unreadable from its first read waited forever, refusing nothing.
@example(Broken(doc=_without_spec("RayJob"), expected="spec", mutation="drop-required"))
async def test_an_invalid_rayjob_ends_validation_failed(stack: Stack, broken: Broken) -> None:
    await _invalid_is_refused(stack, broken)


@WORKFLOW
@given(broken_objects(("RayService",)))
# Regressions: an unreadable RayService failed its workflow on an assert; a serveConfigV2 that
# is not a mapping was refused without its field path.
@example(Broken(doc=_without_spec("RayService"), expected="spec", mutation="drop-required"))
@example(
    Broken(
        doc={
            **_valid("RayService", copy.deepcopy(SERVICE_SPEC)),
            "spec": {**SERVICE_SPEC, "serveConfigV2": "- a\n"},
        },
        expected="spec.serveConfigV2",
        mutation="bad-serve-config",
    )
)
async def test_an_invalid_rayservice_ends_ready_false_validation_failed(
    stack: Stack, broken: Broken
) -> None:
    await _invalid_is_refused(stack, broken)


# --- (e) --------------------------------------------------------------------------------------


# The valid CRs wait on real time (nothing skips it here), under the load of their neighbours.
_WITHIN = 30.0


async def _cluster_ready(stack: Stack, handle: WorkflowHandle[Any, Any], world: Any) -> None:
    await eventually(lambda: len(world.live()) == 3, message="head and two workers", within=_WITHIN)
    world.make_ready()
    await handle.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["Pod"]))
    await eventually(
        lambda: world.status and world.status.state == "ready", message="ready", within=_WITHIN
    )


async def _job_complete(stack: Stack, handle: WorkflowHandle[Any, Any], world: Any) -> None:
    changed = messages.OwnedChanged(kinds=["RayCluster"])
    await eventually(
        lambda: world.live_clusters(), message="the RayJob's RayCluster", within=_WITHIN
    )
    world.make_ready()
    await handle.signal(messages.OWNED_CHANGED, changed)
    await eventually(lambda: world.state == "Running", message="Running", within=_WITHIN)
    world.finish(JobStatus.SUCCEEDED, await stack.env.get_current_time())
    await handle.signal(messages.OWNED_CHANGED, changed)
    await eventually(lambda: world.state == "Complete", message="Complete", within=_WITHIN)


def _service_ready(world: Any) -> bool:
    conditions = (world.status.conditions or []) if world.status else []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


@MIXED
@given(st.lists(broken_objects(WORKFLOW_KINDS), min_size=1, max_size=3))
async def test_valid_crs_progress_beside_invalid_ones(stack: Stack, brokens: list[Broken]) -> None:
    invalid = [(refused_by_us(b), b.expected) for b in brokens]
    handles: list[WorkflowHandle[Any, Any]] = []
    try:
        refused = []
        for doc, expected in invalid:
            handle, world = await stack.start(doc)
            handles.append(handle)
            refused.append((handle, world, expected))
        cluster_handle, cluster = await stack.start(
            _valid("RayCluster", copy.deepcopy(CLUSTER_SPEC))
        )
        job_handle, job = await stack.start(
            _valid("RayJob", job_spec(shutdownAfterJobFinishes=True))
        )
        service_handle, service = await stack.start(
            _valid("RayService", copy.deepcopy(SERVICE_SPEC))
        )
        handles += [cluster_handle, job_handle, service_handle]
        await asyncio.gather(
            _cluster_ready(stack, cluster_handle, cluster),
            _job_complete(stack, job_handle, job),
            eventually(lambda: _service_ready(service), message="RayService Ready", within=_WITHIN),
            *(assert_refused(h, w, expected) for h, w, expected in refused),
        )
        for handle in (cluster_handle, job_handle, service_handle):
            assert await workflow_task_failures(handle) == []
        assert stack.worker.is_running and not stack.worker.is_shutdown
    finally:
        await _terminate(*handles)
