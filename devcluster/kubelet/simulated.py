"""The simulated runtime: pods become Running and Ready after a delay, with no processes.

For scale benchmarks only, as kwok does for real clusters: nothing runs, there are no logs,
probes are not run, but pods are bound, get IPs and go through Pending -> Running with the
same status shape as under the process runtime. Deletion stops a pod at once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from devcluster.kubelet.runtime import PodContext
from devcluster.kubelet.status import RUNNING, ContainerRecord
from devcluster.lifecycle import now_rfc3339


class SimulatedRuntime:
    """Marks every container running and ready `delay` seconds after the pod is bound."""

    name = "simulated"

    def __init__(self, delay: float = 1.0) -> None:
        self.delay = delay

    def setup(self, state_dir: Path) -> None:
        """Nothing to prepare: no namespaces, no processes."""

    def teardown(self) -> None:
        """Nothing to undo."""

    async def run_pod(self, ctx: PodContext) -> None:
        """Wait for the delay (or deletion), report the pod ready, then wait for deletion."""
        spec = ctx.pod().get("spec", {})
        inits = [
            ContainerRecord(c["name"], c.get("image", "")) for c in spec.get("initContainers") or []
        ]
        records = [
            ContainerRecord(c["name"], c.get("image", "")) for c in spec.get("containers") or []
        ]
        ctx.publish(inits, records)
        try:
            await asyncio.wait_for(ctx.terminating.wait(), self.delay)
            return
        except TimeoutError:
            pass
        now = now_rfc3339()
        for record in inits:
            record.state, record.reason, record.exit_code = "terminated", "Completed", 0
            record.started_at = record.finished_at = now
        for index, record in enumerate(records):
            record.state, record.reason, record.started_at = RUNNING, "", now
            record.ready = record.started = True
            record.container_id = f"simulated://{ctx.uid[:8]}-{index}"
        ctx.publish(inits, records)
        await ctx.terminating.wait()

    def log_file(self, ctx: PodContext, container: str, previous: bool) -> Path | None:
        """Simulated containers write no logs."""
        return None

    def writing(self, ctx: PodContext, container: str) -> bool:
        """Simulated containers write no logs."""
        return False
