"""The real control plane for tests: built once (cached), started once per session.

A machine that cannot build it fails these tests with the builder's message (which names what
is missing); they are never skipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from devcluster.control_plane.building import build, default_build
from devcluster.control_plane.processes import ControlPlane, Ports
from devcluster.kubelet import network


@asynccontextmanager
async def running_control_plane(
    state_dir: Path, address: str = "127.0.0.1"
) -> AsyncIterator[ControlPlane]:
    """Build the binaries if needed, then run a control plane on `address`, any free ports.

    On the pod bridge's address (for a node whose pods reach the API server) the bridge is
    made first and held for the API server while it runs, so nodes may come and go.
    """
    target = default_build()
    build(target, quiet=True)
    bridged = address == network.HOST_IP
    if bridged:
        await asyncio.to_thread(network.ensure_bridge)
    async with ControlPlane(state_dir, target, address, ports=Ports(apiserver=0)) as plane:
        if bridged:
            network.claim_bridge(plane.pid("kube-apiserver"))
        yield plane
