"""The simulated runtime: pods become Running and Ready after a delay, with no processes.

For scale tests and benchmarks, as kwok does for real clusters: nothing runs, logs are empty,
probes are not run, but pods are bound, get IPs and go through Pending -> Running with
the same status shape as under the process runtime. Deletion stops a pod at once.

On a real API server's node the API server's proxy dials a head's pod IP; `addresses` (when
the node has a pod bridge) then puts the IP on the host and forwards the head's ports to its
simulated dashboard and Serve proxy.

Ray is simulated too (see `devcluster.ray_simulator`): a container running `ray start --head`
gets a simulated Ray dashboard, and a container running `ray job submit` submits to one and
exits as KubeRay's submitter would, so RayJobs in every submission mode and RayServices go
through their whole lifecycle; the Redis cleanup of a fault-tolerant cluster succeeds at once.
Every other container runs until its pod is deleted.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from devcluster.kubelet.runtime import ExecTarget, PodContext
from devcluster.kubelet.status import (
    RUNNING,
    TERMINATED,
    WAITING,
    ContainerRecord,
    should_restart,
)
from devcluster.lifecycle import now_rfc3339
from devcluster.ray_simulator import submitter
from devcluster.ray_simulator.pods import (
    SimulatedRay,
    auth_error,
    config_error,
    head_container,
    head_ports,
    is_redis_cleanup,
)

JsonObject = dict[str, Any]
CONFIG_RETRY = 1.0
"""Seconds between attempts at a container whose Secret or ConfigMap is missing."""


class PodAddresses(Protocol):
    """Makes a simulated pod's IP answer on the host (see the module docstring)."""

    async def open(self, ip: str, ports: Sequence[int]) -> None:
        """Listen on `ip` at these ports."""

    async def close(self, ip: str) -> None:
        """Stop listening on `ip` and remove it."""


class SimulatedRuntime:
    """Marks every container running and ready `delay` seconds after the pod is bound."""

    name = "simulated"

    def __init__(self, delay: float = 1.0) -> None:
        self.delay = delay
        self.ray = SimulatedRay(serve_delay=delay)
        self.addresses: PodAddresses | None = None

    def setup(self, state_dir: Path) -> None:
        """Nothing to prepare: no namespaces, no processes."""

    def teardown(self) -> None:
        """Nothing to undo."""

    async def run_pod(self, ctx: PodContext) -> None:
        """Wait for the delay (or deletion), report the pod ready, then wait for deletion.

        A pod whose containers all end (submitters) returns once they have.
        """
        pod = ctx.pod()
        spec = pod.get("spec", {})
        inits = [
            ContainerRecord(c["name"], c.get("image", "")) for c in spec.get("initContainers") or []
        ]
        containers = spec.get("containers") or []
        records = [ContainerRecord(c["name"], c.get("image", "")) for c in containers]
        ctx.publish(inits, records)
        if await _stopped_within(ctx, self.delay):
            return
        while errors := self._config_errors(pod, containers, ctx):
            # As a kubelet: the pod stays Pending and the containers are tried again.
            for record in records:
                record.state, record.reason = WAITING, "CreateContainerConfigError"
                record.message = errors.get(record.name, "")
            ctx.publish(inits, records)
            if await _stopped_within(ctx, CONFIG_RETRY):
                return
        now = now_rfc3339()
        for record in inits:
            record.state, record.reason, record.exit_code = "terminated", "Completed", 0
            record.started_at = record.finished_at = now
        for index, record in enumerate(records):
            record.state, record.reason, record.message, record.started_at = RUNNING, "", "", now
            record.ready = record.started = True
            record.container_id = f"simulated://{ctx.uid[:8]}-{index}"
            if is_redis_cleanup(containers[index]):
                record.state, record.reason, record.exit_code = TERMINATED, "Completed", 0
                record.finished_at, record.ready = now, False
        head_spec = head_container(pod)
        refused = auth_error(head_spec, pod, ctx.lookup) if head_spec else None
        if head_spec is not None and refused:  # Ray exits at once; the container failed
            record = next(r for r in records if r.name == head_spec["name"])
            record.state, record.reason, record.exit_code = TERMINATED, "Error", 1
            record.message, record.finished_at, record.ready = refused, now, False
            ctx.publish(inits, records)
            await ctx.terminating.wait()
            return
        head = await self.ray.start_head(ctx.ip, pod, ctx.lookup, ctx.pod_dir / "ray-head.json")
        if head and self.addresses is not None:
            await self.addresses.open(ctx.ip, head_ports(head_container(pod) or {}))
        ctx.publish(inits, records)
        ending = [
            asyncio.create_task(self._submitter(ctx, container, record, inits, records))
            for container, record in zip(containers, records, strict=True)
            if submitter.is_submitter(container)
        ]
        ended = sum(1 for r in records if r.state == TERMINATED)  # the Redis cleanup, above
        stopping = asyncio.create_task(ctx.terminating.wait())
        try:
            if (ending or ended) and len(ending) + ended == len(records):  # a Job's pod: done
                all_ended: asyncio.Future[Any] = asyncio.gather(*ending)
                await asyncio.wait([stopping, all_ended], return_when=asyncio.FIRST_COMPLETED)
            else:
                await stopping
        finally:
            for task in [*ending, stopping]:
                task.cancel()
            await self.ray.stop_head(ctx.ip)
            if head and self.addresses is not None:
                await self.addresses.close(ctx.ip)

    def _config_errors(
        self, pod: JsonObject, containers: Sequence[JsonObject], ctx: PodContext
    ) -> dict[str, str]:
        """Container name -> why it cannot be created (a missing Secret or ConfigMap)."""
        found = {c["name"]: config_error(pod, c, ctx.lookup) for c in containers}
        return {name: error for name, error in found.items() if error}

    async def _submitter(
        self,
        ctx: PodContext,
        container: JsonObject,
        record: ContainerRecord,
        inits: Sequence[ContainerRecord],
        records: Sequence[ContainerRecord],
    ) -> None:
        """Run a simulated `ray job submit` until it exits, restarting it as the policy says.

        Its progress is kept in the pod directory so that a devcluster restart, which runs the
        pod again, neither submits twice nor re-runs a submitter that had already exited.
        """
        pod = ctx.pod()
        namespace = pod["metadata"].get("namespace", "")
        policy = pod.get("spec", {}).get("restartPolicy", "Always")
        marker = ctx.pod_dir / f"submitter-{record.name}.json"
        saved = json.loads(marker.read_text()) if marker.exists() else {}
        while True:
            code = saved.get("exit_code")
            if code is None:
                await asyncio.to_thread(_write, marker, {"started": True})
                code = await self.ray.submit(
                    ctx.ip, namespace, pod, container, ctx.lookup, ctx.terminating, bool(saved)
                )
                if ctx.terminating.is_set():
                    return
                await asyncio.to_thread(_write, marker, {"started": True, "exit_code": code})
            record.state, record.exit_code = TERMINATED, code
            record.reason = "Completed" if code == 0 else "Error"
            record.finished_at, record.ready = now_rfc3339(), False
            ctx.publish(inits, records)
            if not should_restart(policy, code):
                return
            await asyncio.sleep(self.delay)
            saved = {}
            record.last_terminated = record.terminated()
            record.restart_count += 1
            record.state, record.reason, record.started_at = RUNNING, "", now_rfc3339()
            record.ready = True
            ctx.publish(inits, records)

    def log_file(self, ctx: PodContext, container: str, previous: bool) -> Path | None:
        """An empty log for a container that started: it ran, and wrote nothing.

        `kubectl logs` then prints nothing, as for a quiet container, instead of saying a
        running container is still waiting to start. None before it starts (the kubelet
        says it waits) and for `--previous`.
        """
        if previous or not _started(ctx.pod(), container):
            return None
        path = ctx.pod_dir / "simulated-logs" / f"{container}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        return path

    def writing(self, ctx: PodContext, container: str) -> bool:
        """Simulated containers write no logs."""
        return False

    def exec_target(self, ctx: PodContext, container: str) -> ExecTarget | None:
        """Nothing runs in a simulated container, so nothing can be run in one."""
        return None


def _started(pod: JsonObject, container: str) -> bool:
    """Whether the pod's status shows `container` running or finished."""
    status = pod.get("status") or {}
    for record in [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]:
        if record.get("name") == container:
            state = record.get("state") or {}
            return "running" in state or "terminated" in state
    return False


def _write(path: Path, data: JsonObject) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(data))
    os.replace(partial, path)


async def _stopped_within(ctx: PodContext, seconds: float) -> bool:
    """Wait up to `seconds`; True if the pod began terminating meanwhile."""
    try:
        await asyncio.wait_for(ctx.terminating.wait(), seconds)
    except TimeoutError:
        return False
    return True
