"""`kubectl apply -k deploy/` and the rendered Helm chart, accepted by devcluster.

devcluster serves the Kubernetes REST API that kubectl speaks (discovery, CRDs, apply), so
real kubectl 1.37 applies both renderings to it here; it stores RBAC objects without
enforcing them, so what the rules grant is checked by test_rbac.py instead. devcluster does
not serve `policy/v1` (nothing in this project creates a PodDisruptionBudget), so the fixture
declares that kind with a schemaless CRD first: kubectl then sends what it would send to a
real cluster, though devcluster checks the budgets' shape no further.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
import yaml

from devcluster.server import DevCluster
from kuberay_temporal.binaries import find_binary
from tests.deploy.rendering import CHART, DEPLOY, NAMESPACE, helm_docs


class Kubectl:
    """Real kubectl against one devcluster."""

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


PDB_STANDIN = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: poddisruptionbudgets.policy}
spec:
  group: policy
  scope: Namespaced
  names: {plural: poddisruptionbudgets, singular: poddisruptionbudget,
          kind: PodDisruptionBudget, shortNames: [pdb]}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""


@pytest_asyncio.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with DevCluster(tmp_path / "cluster") as cluster:
        run = Kubectl(cluster.kubeconfig_path, tmp_path / "kube-cache")
        await run("apply", "-f", "-", stdin=PDB_STANDIN)
        await run("wait", "--for=condition=Established", "crd/poddisruptionbudgets.policy")
        yield run


async def _names(kubectl: Kubectl, kinds: str, *flags: str) -> set[str]:
    listing = json.loads(await kubectl("get", kinds, *flags, "-o", "json"))
    return {f"{i['kind']}/{i['metadata']['name']}" for i in listing["items"]}


async def test_apply_k_deploy_is_accepted(kubectl: Kubectl) -> None:
    out = await kubectl("apply", "-k", str(DEPLOY))
    assert "namespace/kuberay-temporal created" in out
    assert "customresourcedefinition.apiextensions.k8s.io/rayclusters.ray.io created" in out
    names = {"kuberay-temporal-worker", "kuberay-temporal-bridge"}
    assert await _names(kubectl, "deployments,serviceaccounts", "-n", NAMESPACE) >= {
        f"{kind}/{name}" for kind in ("Deployment", "ServiceAccount") for name in names
    }
    cluster_wide = await _names(kubectl, "clusterroles,clusterrolebindings")
    assert {f"ClusterRole/{n}" for n in names} <= cluster_wide
    # The CRDs are served: the kinds the bridge watches exist.
    resources = await kubectl("api-resources", "--api-group=ray.io", "-o", "name")
    assert set(resources.split()) == {"rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io"}


async def test_the_helm_rendering_is_accepted_too(kubectl: Kubectl) -> None:
    await kubectl("create", "namespace", NAMESPACE)
    await kubectl("apply", "-f", str((CHART / "crds").resolve()))
    manifest = yaml.safe_dump_all(helm_docs())
    out = await kubectl("apply", "--server-side", "-f", "-", stdin=manifest)
    assert "deployment.apps/kuberay-temporal-worker serverside-applied" in out
    assert "poddisruptionbudget.policy/kuberay-temporal-bridge serverside-applied" in out
