"""A deleted pod is removed once its grace period is over, whatever still runs in it."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from devcluster.kubelet import kubelet as kubelet_module
from devcluster.kubelet.events import PodEvent
from devcluster.kubelet.kubelet import Kubelet
from devcluster.kubelet.runtime import ExecTarget, PodContext
from devcluster.node.mirror import Mirror
from tests.eventually import eventually

JsonObject = dict[str, Any]


class StuckRuntime:
    """Starts pods and never stops them, as a runtime that hangs on the way out."""

    name = "stuck"

    def __init__(self) -> None:
        self.started: list[str] = []

    def setup(self, state_dir: Path) -> None:
        """Nothing to prepare."""

    def teardown(self) -> None:
        """Nothing to undo."""

    async def run_pod(self, ctx: PodContext) -> None:
        self.started.append(ctx.uid)
        await asyncio.Event().wait()  # ignores ctx.terminating

    def log_file(self, ctx: PodContext, container: str, previous: bool) -> Path | None:
        return None

    def writing(self, ctx: PodContext, container: str) -> bool:
        return False

    def exec_target(self, ctx: PodContext, container: str) -> ExecTarget | None:
        return None


class RecordedWrites:
    """`PodWrites` that remember which pods were removed."""

    def __init__(self) -> None:
        self.removed: list[str] = []

    def bind(self, pod: JsonObject, node: str) -> None:
        """No binding here: the pod comes bound."""

    def write_status(self, pod: JsonObject, status: JsonObject) -> None:
        """Statuses do not matter to this test."""

    def remove(self, pod: JsonObject) -> None:
        self.removed.append(pod["metadata"]["uid"])

    def latest(self, pod: JsonObject) -> JsonObject:
        return pod

    def event(self, pod: JsonObject, event: PodEvent) -> None:
        """Events do not matter to this test."""


async def test_a_pod_whose_runtime_does_not_stop_is_removed_after_its_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kubelet_module, "GRACE_SLACK", 0.2, raising=False)
    runtime, writes, mirror = StuckRuntime(), RecordedWrites(), Mirror()
    kubelet = Kubelet(runtime, tmp_path)
    serving = asyncio.create_task(kubelet.serve(mirror, writes))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "1"},
        "spec": {"nodeName": kubelet.node_name, "containers": [{"name": "c", "image": "x"}]},
    }
    try:
        mirror.put("/pods", pod)
        await eventually(lambda: runtime.started == ["u1"], message="the pod started")
        deleted = copy.deepcopy(pod)
        deleted["metadata"].update(
            resourceVersion="2",
            deletionTimestamp="2026-01-01T00:00:00Z",
            deletionGracePeriodSeconds=1,
        )
        mirror.put("/pods", deleted)
        assert writes.removed == []  # within the grace period (1 s) nothing is forced
        await eventually(lambda: writes.removed == ["u1"], within=10, message="the pod removed")
    finally:
        serving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await serving
