"""The real control plane for tests: built once (cached), started once per session.

A machine that cannot build it fails these tests with the builder's message (which names what
is missing); they are never skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from devcluster.control_plane.building import build, default_build
from devcluster.control_plane.processes import ControlPlane, Ports


@asynccontextmanager
async def running_control_plane(state_dir: Path) -> AsyncIterator[ControlPlane]:
    """Build the binaries if needed, then run a control plane on loopback, any free ports."""
    target = default_build()
    build(target, quiet=True)
    async with ControlPlane(state_dir, target, ports=Ports(apiserver=0)) as plane:
        yield plane
