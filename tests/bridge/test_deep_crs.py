"""The bridge with a RayCluster nested 2,000 levels deep: deeper than Python's json decodes.

Such a CR, in a list or in a watch, used to stop the bridge: no CR of any kind in any
namespace was served until a restart, which failed again on the same list. Now the CR is
logged by name, handed on by its metadata (its workflow refuses it as invalid), and every
other CR is served as before. The bridge reads through `deepening_proxy`, which serves the
CR nested as deep as a real API server would keep it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from activities.kube import client as kube
from bridge.running import Bridge
from bridge.signalling import Signaller
from tests.bridge.conftest import Stack
from tests.bridge.standin import Seen
from tests.bridge.test_bridge import new_namespace, seen
from tests.deep_objects import PLACEHOLDER, deepening_proxy
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(120)


@contextlib.asynccontextmanager
async def bridge_reading_deep(
    stack: Stack, namespace: str, state: Path, **options: Any
) -> AsyncIterator[tuple[Bridge, asyncio.Task[None]]]:
    async with deepening_proxy(stack.cluster.url, state) as config:
        client = await kube.connect(str(config))
        signaller = Signaller(stack.env.client, stack.task_queue)
        bridge = Bridge(client, signaller, namespaces=[namespace], window=0.05, **options)
        task = asyncio.create_task(bridge.run())
        try:
            await eventually(
                lambda: task.done() or all(w.listed.is_set() for w in bridge.watchers),
                within=30,
                message="the first lists",
            )
            assert not task.done(), task.exception()
            yield bridge, task
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await client.close()


async def create_deep(stack: Stack, name: str, namespace: str) -> str:
    """Create a RayCluster nested 2,000 levels deep (as the proxy serves it); its workflow id."""
    template = {"spec": {"containers": [], "x": PLACEHOLDER}}
    head = {"rayStartParams": {}, "template": template}
    created = await stack.create_cluster(name, namespace, headGroupSpec=head)
    return f"raycluster/{namespace}/{name}/{created['metadata']['uid']}"


async def create_plain(stack: Stack, name: str, namespace: str) -> str:
    created = await stack.create_cluster(name, namespace)
    return f"raycluster/{namespace}/{name}/{created['metadata']['uid']}"


async def signalled(stack: Stack, workflow_id: str) -> Seen | None:
    """What a CR's workflow has heard, once it has heard of generation 1."""
    try:
        heard = await seen(stack, workflow_id)
    except (RPCError, WorkflowQueryFailedError):  # not started yet
        return None
    return heard if heard.generation == 1 else None


@pytest.mark.parametrize("arrives", ["listed", "watched"])
async def test_a_cr_nested_2000_deep_stops_no_other_cr(
    stack: Stack, tmp_path: Path, caplog: pytest.LogCaptureFixture, arrives: str
) -> None:
    caplog.set_level(logging.WARNING, logger="activities.kube.decoding")
    namespace = await new_namespace(stack)
    deep = await create_deep(stack, "deep", namespace) if arrives == "listed" else None
    async with bridge_reading_deep(stack, namespace, tmp_path) as (_, task):
        if deep is None:
            deep = await create_deep(stack, "deep", namespace)
        plain = await create_plain(stack, "plain", namespace)
        await eventually(lambda: signalled(stack, plain), within=30, message="the plain CR")
        # Its metadata is whole: its own workflow hears of it too, and refuses it there.
        await eventually(lambda: signalled(stack, deep), within=30, message="the deep CR")
        assert not task.done()
    assert (
        f"RayCluster {namespace}/deep nests deeper than 100 levels "
        "(at spec.headGroupSpec.template.spec.x.a.a.a…); decoded without its deeper parts"
    ) in caplog.messages


async def test_a_deep_cr_stays_listed_and_its_deletion_ends_its_workflow(
    stack: Stack, tmp_path: Path
) -> None:
    """Left out of a list, the CR would read as deleted; its DELETED event must still count."""
    namespace = await new_namespace(stack)
    deep = await create_deep(stack, "deep", namespace)
    async with bridge_reading_deep(stack, namespace, tmp_path, relist_period=1.0) as (bridge, _):
        await eventually(lambda: signalled(stack, deep), within=30, message="the deep CR")
        watcher = next(w for w in bridge.watchers if w.target.kind == "RayCluster")
        await eventually(lambda: watcher.stats.lists >= 3, within=30, message="two re-lists")
        assert not (await seen(stack, deep)).gone
        await stack.kube.delete(kube.RAYCLUSTERS, namespace, "deep")
        handle = stack.env.client.get_workflow_handle(deep, result_type=Seen)
        assert (await asyncio.wait_for(handle.result(), 30)).gone
