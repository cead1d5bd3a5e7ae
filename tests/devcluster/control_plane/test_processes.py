"""The control plane built from Go modules serves Kubernetes v1.37.2 and keeps its state."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from devcluster.control_plane.processes import ControlPlane
from kuberay_temporal.binaries import kubectl
from tests.eventually import eventually
from tests.real_cluster import running_control_plane
from tests.reference import REPO_ROOT

pytestmark = pytest.mark.kubernetes


async def run_kubectl(kubeconfig: Path, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        str(kubectl()),
        f"--kubeconfig={kubeconfig}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


async def test_kubectl_talks_to_a_v1_37_2_api_server(control_plane: ControlPlane) -> None:
    version = json.loads(await run_kubectl(control_plane.kubeconfig_path, "version", "-o", "json"))
    assert version["serverVersion"]["gitVersion"] == "v1.37.2"
    services = json.loads(
        await run_kubectl(
            control_plane.kubeconfig_path, "get", "service", "kubernetes", "-o", "json"
        )
    )
    assert services["spec"]["clusterIP"] == "10.96.0.1"


async def test_started_means_the_service_account_controller_runs(tmp_path: Path) -> None:
    async with running_control_plane(tmp_path) as plane:
        accounts = await run_kubectl(
            plane.kubeconfig_path, "get", "serviceaccounts", "-n", "default", "-o", "name"
        )

    # Else a pod in a namespace created right after start is refused with "error looking up
    # service account NS/default", as KubeRay's e2e tests found.
    assert accounts.split() == ["serviceaccount/default"]


async def test_a_second_start_keeps_objects_and_credentials(tmp_path: Path) -> None:
    async with running_control_plane(tmp_path) as plane:
        await run_kubectl(
            plane.kubeconfig_path, "create", "configmap", "kept", "--from-literal=a=1"
        )
        first_ca = plane.certificates.ca.cert.read_bytes()
    async with running_control_plane(tmp_path) as plane:
        found = json.loads(
            await run_kubectl(plane.kubeconfig_path, "get", "configmap", "kept", "-o", "json")
        )
        assert found["data"] == {"a": "1"}
        assert plane.certificates.ca.cert.read_bytes() == first_ca


_HOLDER = """
import asyncio, sys
from pathlib import Path
from tests.eventually import eventually
from tests.real_cluster import running_control_plane
from tests.reference import REPO_ROOT

async def main() -> None:
    async with running_control_plane(Path(sys.argv[1])) as plane:
        names = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
        print(" ".join(str(plane.pid(name)) for name in names), flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_a_killed_owner_leaves_no_component_running(tmp_path: Path) -> None:
    """SIGKILL of the process that started the control plane ends all four components."""
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _HOLDER,
        str(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO_ROOT,
    )
    assert holder.stdout is not None
    line = await asyncio.wait_for(holder.stdout.readline(), 120)
    pids = [int(pid) for pid in line.split()]
    assert len(pids) == 4 and all(_running(pid) for pid in pids)
    holder.kill()
    await holder.wait()

    def all_gone() -> bool:
        return not [pid for pid in pids if _running(pid)]

    await eventually(all_gone, within=30, message="every component gone with its owner")


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for its (now init) parent to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"
