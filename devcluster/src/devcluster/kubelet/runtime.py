"""What the kubelet gives a pod runtime, and what a runtime must do.

The kubelet (see `kubelet`) binds pods, allocates IPs, writes status and removes deleted pods;
a runtime runs one pod's containers and reports their states. Two runtimes exist: `process`
(real local processes, the default) and `simulated` (pods become Ready without processes,
for scale benchmarks).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from devcluster.kubelet.status import ContainerRecord

JsonObject = dict[str, Any]
Publish = Callable[[Sequence[ContainerRecord], Sequence[ContainerRecord]], None]


def _no_token(_source: JsonObject) -> bytes | None:
    return None


def _no_env() -> Mapping[str, str]:
    return {}


@dataclass
class PodContext:
    """One pod as its runtime sees it."""

    uid: str
    ip: str
    pod_dir: Path
    current: Callable[[], JsonObject | None]  # the latest stored pod, None once removed
    publish: Publish  # (init container records, container records) -> status written
    lookup: Callable[[str, str], Mapping[str, bytes] | None]  # (configMap|secret, name)
    terminating: asyncio.Event = field(default_factory=asyncio.Event)
    last: JsonObject = field(default_factory=dict)  # the pod as last seen
    # A real API server's node only: projected serviceAccountToken source -> minted token,
    # and the Service environment variables of the pod's namespace.
    token: Callable[[JsonObject], bytes | None] = _no_token
    service_env: Callable[[], Mapping[str, str]] = _no_env

    def pod(self) -> JsonObject:
        """Return the latest pod object (the last one seen once it is gone)."""
        latest = self.current()
        if latest is not None:
            self.last = latest
        return self.last

    def grace(self) -> float:
        """Return the grace period the deletion asked for."""
        meta = self.pod()["metadata"]
        return float(meta.get("deletionGracePeriodSeconds") or 0)


@dataclass(frozen=True)
class ExecTarget:
    """How to run a command inside a running container (`kubectl exec`)."""

    argv: Sequence[str]  # the host command line the command's own argv is appended to
    env: Mapping[str, str]  # the container's environment, and nothing of the node's


class Runtime(Protocol):
    """Runs pods' containers for the kubelet."""

    name: str

    def setup(self, state_dir: Path) -> None:
        """Prepare the node (raise RuntimeUnavailable if this runtime cannot run here)."""

    def teardown(self) -> None:
        """Undo `setup`; called after every pod has stopped."""

    async def run_pod(self, ctx: PodContext) -> None:
        """Run a pod until its containers are done or `ctx.terminating` is set and they stop.

        Cancellation must kill the pod's processes at once.
        """

    def log_file(self, ctx: PodContext, container: str, previous: bool) -> Path | None:
        """Return the log file `kubectl logs` reads, if any."""

    def writing(self, ctx: PodContext, container: str) -> bool:
        """Return whether the container's current attempt may still write to its log."""

    def exec_target(self, ctx: PodContext, container: str) -> ExecTarget | None:
        """Return how to run a command in the container while it runs, else None."""
