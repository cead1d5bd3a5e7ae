"""`kuberay-temporal dev --control-plane kubernetes`: the operator on a real v1.37.2 API server.

The stack runs etcd, kube-apiserver, kube-controller-manager and kube-scheduler with
devcluster's kubelet (simulated runtime) as the node, and its worker and bridge as deploy/'s
ServiceAccounts. A RayCluster sample's pods and a RayJob's
pods are scheduled by kube-scheduler onto the node and shown Running by `kubectl get pods`;
the RayJob reaches Complete on simulated Ray, whose head the worker reaches through
kube-apiserver's service proxy (it dials the head's pod IP, which the node makes answer).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import LocalStack, running_stack
from tests.e2e.test_metrics import apply, get, reaches
from tests.e2e.test_simulated_ray import sample
from tests.eventually import eventually
from tests.reference import KUBERAY_SAMPLES, REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.kubernetes]


async def pod_statuses(stack: LocalStack, selector: str) -> dict[str, str]:
    """Pod name -> the STATUS column of `kubectl get pods`."""
    out = await stack.kubectl("get", "pods", "-l", selector, "--no-headers")
    return {line.split()[0]: line.split()[2] for line in out.splitlines() if line.strip()}


async def test_a_raycluster_and_a_rayjob_run_on_the_real_api_server(tmp_path: Path) -> None:
    async with running_stack(tmp_path, "simulated", control_plane="kubernetes") as stack:
        version = json.loads(await stack.kubectl("version", "-o", "json"))
        assert version["serverVersion"]["gitVersion"] == "v1.37.2"
        nodes = json.loads(await stack.kubectl("get", "nodes", "-o", "json"))["items"]
        assert [n["metadata"]["name"] for n in nodes] == ["devcluster"]
        # The worker and the bridge are deploy/'s ServiceAccounts here, not admins.
        assert "worker and bridge as deploy/'s ServiceAccounts" in stack.log.read_text()
        for component in ("worker", "bridge"):
            config = stack.state_dir / "identities" / f"{component}.kubeconfig"
            as_it = LocalStack(stack.state_dir, config, stack.client, stack.log)
            review = json.loads(await as_it.kubectl("auth", "whoami", "-o", "json"))
            account = f"system:serviceaccount:kuberay-temporal:kuberay-temporal-{component}"
            assert review["status"]["userInfo"]["username"] == account
            allowed = await as_it.kubectl("auth", "can-i", "delete", "nodes", check=False)
            assert allowed.strip() == "no"

        cluster = yaml.safe_load((REPO_ROOT / "samples" / "raycluster.yaml").read_text())
        applied = time.monotonic()
        await apply(stack, cluster)
        selector = "ray.io/cluster=raycluster-mini"

        async def head_running() -> bool:
            statuses = await pod_statuses(stack, f"{selector},ray.io/node-type=head")
            return list(statuses.values()) == ["Running"]

        await eventually(head_running, within=180, message="the head pod Running")
        head_latency = time.monotonic() - applied

        async def all_running() -> dict[str, str] | None:
            statuses = await pod_statuses(stack, selector)
            return (
                statuses if len(statuses) == 2 and set(statuses.values()) == {"Running"} else None
            )

        await eventually(all_running, within=180, message="head and worker Running")

        quick = {"entrypoint": "echo simulated; sleep 2", "ttlSecondsAfterFinished": 0}
        await apply(stack, sample("http", "rayjob.http-mode.yaml", **quick))
        job = await reaches(stack, "http", "Complete", within=240)
        assert job["status"]["jobStatus"] == "SUCCEEDED", job["status"]

        await stack.kubectl("delete", "raycluster", "raycluster-mini", "--wait=true")

        async def pods_gone() -> bool:
            return not await pod_statuses(stack, selector)

        await eventually(pods_gone, within=120, message="the RayCluster's pods deleted")
        print(f"\nraycluster-mini: apply -> head pod Running in {head_latency:.1f} s")
        assert (await get(stack, "node", "devcluster"))["status"]["nodeInfo"]["kubeletVersion"]


async def test_kuberay_sample_with_real_ray_logs_exec_and_rayjobs(tmp_path: Path) -> None:
    """KubeRay's own RayCluster sample with real Ray; `kubectl logs` and `exec` into its head
    go through kube-apiserver to the node's kubelet API; RayJobs in HTTPMode and K8sJobMode
    finish on their own clusters."""
    async with running_stack(tmp_path, "process", control_plane="kubernetes") as stack:
        path = KUBERAY_SAMPLES / "ray-cluster.sample.yaml"
        await stack.kubectl("apply", "-f", str(path))
        name = yaml.safe_load(path.read_text())["metadata"]["name"]

        async def ready() -> bool:
            cluster = await get(stack, "raycluster", name)
            return (cluster.get("status") or {}).get("state") == "ready"

        await eventually(ready, within=300, message=f"{name} ready")
        head = (
            await stack.kubectl("get", "pods", "-l", f"ray.io/cluster={name},ray.io/node-type=head",
                                "-o", "name")
        ).strip()  # fmt: skip
        assert "Ray runtime started" in await stack.kubectl("logs", head)
        assert (await stack.kubectl("exec", head, "--", "hostname")).strip() == head.split("/")[1]
        status = await stack.kubectl("exec", head, "--", "ray", "status")
        assert "Autoscaler status" in status, status

        quick = {"entrypoint": "python -c 'print(42)'", "ttlSecondsAfterFinished": 0}
        await apply(stack, sample("http", "rayjob.http-mode.yaml", **quick))
        await apply(stack, sample("k8s", "rayjob.k8s-job-mode.yaml", **quick))
        for job_name in ("http", "k8s"):
            job = await reaches(stack, job_name, "Complete", within=300)
            assert job["status"]["jobStatus"] == "SUCCEEDED", job["status"]
