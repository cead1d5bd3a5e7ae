"""The real control plane for tests: built once (cached), started once per session.

A machine that cannot build it fails these tests with the builder's message (which names what
is missing); they are never skipped.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from devcluster.control_plane.building import build, default_build
from devcluster.control_plane.processes import SERVICE_CIDR, ControlPlane, Ports
from devcluster.kubelet import network


@asynccontextmanager
async def running_control_plane(
    state_dir: Path, address: str = "127.0.0.1"
) -> AsyncIterator[ControlPlane]:
    """Build the binaries if needed, then run a control plane on `address`, any free ports.

    On the pod bridge's address (for a node whose pods reach the API server) the bridge is
    made first and held for the API server while it runs, so nodes may come and go; and its
    Services get a range of their own, as another stack on the machine (a developer's
    `kuberay-temporal dev`) answers on the ClusterIPs of 10.96.0.0/12 from the same bridge.
    """
    target = default_build()
    build(target, quiet=True)
    bridged = address == network.HOST_IP
    services = SERVICE_CIDR
    if bridged:
        await asyncio.to_thread(network.ensure_bridge)
        services = f"10.{random.randint(100, 200)}.{random.randint(0, 255)}.0/24"
    plane = ControlPlane(state_dir, target, address, Ports(apiserver=0), services)
    async with plane:
        if bridged:
            network.claim_bridge(plane.pid("kube-apiserver"))
        yield plane
