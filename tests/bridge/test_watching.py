"""One object the bridge cannot handle is logged and skipped; every other object goes on.

The bridge runs with a scripted API (one list, then one watch stream) and a signaller that
records what it is asked to deliver, so each malformed object is exactly the one given.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import types
from collections.abc import AsyncIterator
from typing import Any

import pytest

from activities.kube import client as kube
from activities.kube import list_watch
from bridge.queueing import Batch
from bridge.running import Bridge
from bridge.targets import RAYCLUSTER, RAYCRONJOB
from crds.refs import ObjectRef
from runtime.settings import Settings
from tests.activities.kube.test_informer import EndingApi
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(30)


def cluster(name: str, **meta: Any) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "generation": 1} | meta
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata, "spec": {}}


class ScriptedApi:
    """Answers one list with `items`, then one watch with `events`, then a quiet watch."""

    def __init__(self, items: list[Any], events: list[Any]) -> None:
        self.items, self.events = items, events
        self.watches = 0

    async def list_versioned(
        self, resource: kube.Resource, namespace: str | None, label_selector: str = ""
    ) -> tuple[list[Any], str]:
        return self.items, "1"

    def watch(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.watches += 1
        return self._stream(self.events if self.watches == 1 else [])

    async def _stream(self, events: list[Any]) -> AsyncIterator[Any]:
        for event in events:
            yield event
        await asyncio.Event().wait()  # an open watch with nothing more to say


class RecordingSignaller:
    """Records the CRs it is asked to signal; knows of no running workflow."""

    def __init__(self) -> None:
        self.signalled: set[str] = set()

    async def running(self, kind: str, namespace: str | None) -> list[ObjectRef]:
        return []

    async def deliver(self, batch: Batch) -> None:
        self.signalled.add(batch.target.name)


@contextlib.asynccontextmanager
async def bridge_on(api: ScriptedApi) -> AsyncIterator[tuple[Bridge, RecordingSignaller]]:
    signaller = RecordingSignaller()
    bridge = Bridge(api, signaller, namespaces=["ns"], targets=[RAYCLUSTER], window=0.01)  # type: ignore[arg-type]
    task = asyncio.create_task(bridge.run())
    try:
        yield bridge, signaller
        assert not task.done(), task.exception()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


BAD_OBJECTS = [
    pytest.param("a string", id="not-a-mapping"),
    pytest.param({"kind": "RayCluster", "spec": {}}, id="no-metadata"),
    pytest.param(cluster("", uid=""), id="no-name-or-uid"),
    pytest.param(cluster("bad-generation", generation="many"), id="a-callback-raises"),
    pytest.param(cluster("bad-namespace", namespace=7), id="a-model-rejects-it"),
]


@pytest.mark.parametrize("bad", BAD_OBJECTS)
async def test_a_bad_object_in_a_list_stops_nothing(bad: Any) -> None:
    api = ScriptedApi([cluster("before"), bad, cluster("after")], [])
    async with bridge_on(api) as (bridge, signaller):
        await eventually(lambda: signaller.signalled == {"before", "after"}, message="signals")
        assert bridge.watchers[0].stats.skipped == 1


@pytest.mark.parametrize("bad", BAD_OBJECTS)
async def test_a_bad_object_in_a_watch_stops_nothing(bad: Any) -> None:
    events = [
        {"type": "ADDED", "object": cluster("before")},
        {"type": "ADDED", "object": bad},
        {"type": "ADDED", "object": cluster("after")},
    ]
    async with bridge_on(ScriptedApi([], events)) as (bridge, signaller):
        await eventually(lambda: signaller.signalled == {"before", "after"}, message="signals")
        assert bridge.watchers[0].stats.skipped == 1


async def test_a_failure_is_logged_with_the_object_and_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="bridge.watching")
    api = ScriptedApi([cluster("bad-generation", generation="many"), cluster("fine")], [])
    async with bridge_on(api) as (_, signaller):
        await eventually(lambda: signaller.signalled == {"fine"}, message="a signal")
    # Only the bridge's own: asyncio may log a task an earlier test left to the collector.
    (record,) = [r for r in caplog.records if r.name == "bridge.watching"]
    assert record.getMessage() == (
        "RayCluster ns/bad-generation: handling its MODIFIED event failed; skipped"
    )
    assert record.exc_info is not None and record.exc_info[0] is ValueError
    assert getattr(record, "workflow_id", None) == "raycluster/ns/bad-generation/uid-bad-generation"


async def test_the_configured_bridge_lists_once_while_its_watches_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No LIST KubeRay does not make: while its watch holds, the bridge as deployed takes each
    stream up again from the version it reached. Each look at the clock here is a minute later,
    so the 200 watches below span more than 6 hours (it listed every 5 minutes before)."""
    minutes = itertools.count()
    monkeypatch.setattr(
        list_watch, "time", types.SimpleNamespace(monotonic=lambda: 60.0 * next(minutes))
    )
    api = EndingApi(ending=200)
    signaller = RecordingSignaller()
    configured = Bridge.configured(api, signaller, Settings())  # type: ignore[arg-type]
    bridge = Bridge(
        api,  # type: ignore[arg-type]
        signaller,
        namespaces=["ns"],
        targets=[RAYCLUSTER],
        relist_period=configured.relist_period,
    )
    task = asyncio.create_task(bridge.run())
    try:
        await eventually(lambda: api.watches > api.ending, message="the watch that stays open")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert api.lists == 1, bridge.watchers[0].stats


def test_raycronjobs_are_watched_only_with_kuberays_raycronjob_gate_on() -> None:
    """KubeRay v1.7.0 starts no RayCronJob controller with the gate off (its default)."""
    api, signaller = EndingApi(ending=0), RecordingSignaller()
    default = Bridge.configured(api, signaller, Settings())  # type: ignore[arg-type]
    gated = Bridge.configured(
        api,  # type: ignore[arg-type]
        signaller,
        Settings.from_env({"KUBERAY_TEMPORAL_FEATURE_GATES": "RayCronJob=true"}),
    )

    assert RAYCRONJOB not in default.targets and RAYCLUSTER in default.targets
    assert set(gated.targets) == set(default.targets) | {RAYCRONJOB}
