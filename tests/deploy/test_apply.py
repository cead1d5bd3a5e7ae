"""`kubectl apply -k deploy/` and the rendered Helm chart, accepted by a real kube-apiserver.

Real kubectl 1.37 applies both renderings to a real v1.37 control plane, which judges them as
a cluster would: the CRDs' schemas, the PodDisruptionBudgets (`policy/v1`), the RBAC objects,
and, through the Deployment and ReplicaSet controllers, the pod templates, created as pods
running as their ServiceAccounts (they stay Pending: the control plane has no node), and the
NetworkPolicies (their named ports, selectors and peers). Each test
gets a control plane of its own, since both install the same cluster-wide objects; what the
rules grant is tested by test_rbac.py and test_rbac_enforced.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
import yaml

from kuberay_temporal.binaries import find_binary
from tests.deploy.rendering import CHART, DEPLOY, NAMESPACE, helm_docs
from tests.eventually import eventually
from tests.real_cluster import running_control_plane

pytestmark = [pytest.mark.timeout(300), pytest.mark.kubernetes]

POLICIES = {
    "NetworkPolicy/kuberay-temporal",
    "NetworkPolicy/kuberay-temporal-worker-ray-heads",
}
"""The worker's and the bridge's NetworkPolicies (test_network_policy.py checks their rules)."""


class Kubectl:
    """Real kubectl against one cluster."""

    def __init__(self, kubeconfig: Path, cache_dir: Path) -> None:
        self._flags = [f"--kubeconfig={kubeconfig}", f"--cache-dir={cache_dir}"]

    async def __call__(self, *args: str, stdin: str | None = None) -> str:
        process = await asyncio.create_subprocess_exec(
            str(find_binary("kubectl")),
            *self._flags,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(stdin and stdin.encode()), 90)
        assert process.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
        return out.decode()


@pytest_asyncio.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    """kubectl as the administrator of a control plane that holds nothing of ours yet."""
    async with running_control_plane(tmp_path / "control-plane") as plane:
        yield Kubectl(plane.kubeconfig_path, tmp_path / "kube-cache")


async def _names(kubectl: Kubectl, kinds: str, *flags: str) -> set[str]:
    listing = json.loads(await kubectl("get", kinds, *flags, "-o", "json"))
    return {f"{i['kind']}/{i['metadata']['name']}" for i in listing["items"]}


async def _pods_run_as_their_accounts(kubectl: Kubectl) -> None:
    """Each Deployment's pods exist, created from its template, as its ServiceAccount."""
    wanted = {"kuberay-temporal-worker": 2, "kuberay-temporal-bridge": 1}

    async def pods() -> dict[str, int] | None:
        listing = json.loads(await kubectl("get", "pods", "-n", NAMESPACE, "-o", "json"))
        found: dict[str, int] = {}
        for pod in listing["items"]:
            account = pod["spec"]["serviceAccountName"]
            found[account] = found.get(account, 0) + 1
        return found if found == wanted else None

    await eventually(pods, within=60, message="the Deployments' pods")


async def test_apply_k_deploy_is_accepted(kubectl: Kubectl) -> None:
    out = await kubectl("apply", "-k", str(DEPLOY))
    assert "namespace/kuberay-temporal created" in out
    assert "customresourcedefinition.apiextensions.k8s.io/rayclusters.ray.io created" in out
    assert "poddisruptionbudget.policy/kuberay-temporal-bridge created" in out
    assert await _names(kubectl, "networkpolicies", "-n", NAMESPACE) == POLICIES
    names = {"kuberay-temporal-worker", "kuberay-temporal-bridge"}
    assert await _names(kubectl, "deployments,serviceaccounts", "-n", NAMESPACE) >= {
        f"{kind}/{name}" for kind in ("Deployment", "ServiceAccount") for name in names
    }
    cluster_wide = await _names(kubectl, "clusterroles,clusterrolebindings")
    assert {f"ClusterRole/{n}" for n in names} <= cluster_wide
    await kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    # The CRDs are served: the kinds the bridge watches exist.
    resources = await kubectl("api-resources", "--api-group=ray.io", "-o", "name")
    assert set(resources.split()) == {
        f"{plural}.ray.io" for plural in ("rayclusters", "rayjobs", "rayservices", "raycronjobs")
    }
    await _pods_run_as_their_accounts(kubectl)
    # A second apply would change nothing (kubectl diff exits 1 when it would).
    await kubectl("diff", "-k", str(DEPLOY))


async def test_the_helm_rendering_is_accepted_too(kubectl: Kubectl) -> None:
    await kubectl("create", "namespace", NAMESPACE)
    await kubectl("apply", "-f", str((CHART / "crds").resolve()))
    manifest = yaml.safe_dump_all(helm_docs())
    out = await kubectl("apply", "--server-side", "-f", "-", stdin=manifest)
    assert "deployment.apps/kuberay-temporal-worker serverside-applied" in out
    assert "poddisruptionbudget.policy/kuberay-temporal-bridge serverside-applied" in out
    assert await _names(kubectl, "networkpolicies", "-n", NAMESPACE) == POLICIES
    await _pods_run_as_their_accounts(kubectl)
