"""The control plane built from Go modules serves Kubernetes v1.37.2 and keeps its state."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from devcluster.control_plane.processes import ControlPlane
from kuberay_temporal.binaries import kubectl
from tests.real_cluster import running_control_plane


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
