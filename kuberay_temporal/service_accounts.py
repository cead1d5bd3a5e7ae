"""The worker and the bridge as the ServiceAccounts of deploy/, on a cluster that enforces RBAC.

A worker that talks to the API server as cluster-admin proves nothing about the rules in
deploy/; one that talks as `kuberay-temporal-worker` finds every rule that is missing, as a
403. `apply_identities` applies what deploy/ says about who the components are: its Namespace,
ServiceAccounts, ClusterRoles and ClusterRoleBindings (Roles and RoleBindings for a namespaced
install), rendered by `kubectl kustomize` as
`kubectl apply -k deploy/` renders them (with kustomize components of `deploy/components/` on
request). `service_account_kubeconfig` then gives a process outside the cluster what a pod of
that account gets: a token from the TokenRequest API, with the API server's URL and CA.
`deploy_identities` does both, for the worker and the bridge.

deploy/ is read from the checkout this package runs from, as the control plane's Go module is.
"""

from __future__ import annotations

import asyncio
import base64
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeConflict
from kuberay_temporal.binaries import kubectl

DASHBOARD_PROXY = "dashboard-proxy"
"""The component of deploy/components/ that lets the worker reach dashboards via the API server."""
SINGLE_NAMESPACE = "single-namespace"
"""The component of deploy/components/ that installs Roles in one namespace, no ClusterRole."""
WORKER = "kuberay-temporal-worker"
BRIDGE = "kuberay-temporal-bridge"
"""The ServiceAccounts deploy/ runs the two components as."""

CLUSTER_ROLES = kube.Resource("rbac.authorization.k8s.io", "v1", "clusterroles", namespaced=False)
CLUSTER_ROLE_BINDINGS = kube.Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", namespaced=False
)
_IDENTITY_KINDS = {
    "Namespace": kube.NAMESPACES,
    "ServiceAccount": kube.SERVICE_ACCOUNTS,
    "ClusterRole": CLUSTER_ROLES,
    "ClusterRoleBinding": CLUSTER_ROLE_BINDINGS,
    # A namespaced install (deploy/components/single-namespace) has these instead.
    "Role": kube.ROLES,
    "RoleBinding": kube.ROLE_BINDINGS,
}
_MIN_TOKEN = timedelta(minutes=10)
"""The shortest token the API server issues."""


class DeployNotFoundError(RuntimeError):
    """deploy/ is not beside this package: not a checkout of the repository."""


@dataclass(frozen=True)
class Identities:
    """A kubeconfig per component, each authenticating as its ServiceAccount."""

    worker: Path
    bridge: Path


def deploy_dir() -> Path:
    """`deploy/` of this checkout.

    Raises:
        DeployNotFoundError: If this package was installed without the repository around it.
    """
    deploy = Path(__file__).resolve().parents[1] / "deploy"
    if not (deploy / "kustomization.yaml").exists():
        raise DeployNotFoundError(f"no kustomize base at {deploy}: run from a checkout")
    return deploy


async def render_identities(components: Sequence[str] = ()) -> list[kube.JSON]:
    """The Namespace, ServiceAccounts, ClusterRoles and bindings of deploy/, in its order.

    Args:
        components: Names of kustomize components under `deploy/components/` to add, as an
            overlay would (`dashboard-proxy` for a worker outside the cluster network).
    """
    base = deploy_dir()
    with tempfile.TemporaryDirectory() as tmp:
        target = _overlay(base, components, Path(tmp)) if components else base
        process = await asyncio.create_subprocess_exec(
            str(kubectl()),
            "kustomize",
            str(target),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {target}: {err.decode(errors='replace')}")
    return [doc for doc in yaml.safe_load_all(out) if doc and doc["kind"] in _IDENTITY_KINDS]


def _overlay(base: Path, components: Sequence[str], root: Path) -> Path:
    """Write a kustomization under `root`: the base with `components` added."""
    # kustomize refuses absolute paths to other kustomizations.
    overlay = {
        "resources": [os.path.relpath(base, root)],
        "components": [os.path.relpath(base / "components" / c, root) for c in components],
    }
    (root / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    return root


async def apply_identities(client: KubeClient, objects: Sequence[kube.JSON]) -> None:
    """Create each object, or replace it with deploy/'s version when it exists.

    Replacing puts back a rule someone removed, so a second call restores deploy/'s RBAC.
    """
    for obj in objects:
        resource = _IDENTITY_KINDS[obj["kind"]]
        namespace = obj["metadata"].get("namespace")
        try:
            await client.create(resource, namespace, obj)
        except KubeConflict as err:
            if not err.already_exists:
                raise
            if obj["kind"] in ("Namespace", "ServiceAccount"):
                continue  # nothing of them is deploy/'s to restore; a token may be bound
            name = obj["metadata"]["name"]
            current = await client.get(resource, namespace, name)
            replacement = {**obj, "metadata": {**obj["metadata"]}}
            replacement["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await client.request("PUT", resource.path(namespace, name), body=replacement)


async def service_account_kubeconfig(
    admin_kubeconfig: Path,
    namespace: str,
    service_account: str,
    path: Path,
    duration: timedelta = timedelta(hours=1),
) -> Path:
    """Write a kubeconfig that authenticates as a ServiceAccount, with a token from TokenRequest.

    The token is bound to nothing but the account and expires after `duration` (at least ten
    minutes, the API server's minimum): a process that runs longer needs a new kubeconfig.

    Args:
        admin_kubeconfig: A kubeconfig allowed to create `serviceaccounts/token`; its cluster
            entry (URL and CA) is copied.
        namespace: The ServiceAccount's namespace.
        service_account: The ServiceAccount's name.
        path: Where to write the kubeconfig (readable by its owner only).
        duration: How long the token is valid.

    Returns:
        `path`.
    """
    seconds = int(max(duration, _MIN_TOKEN).total_seconds())
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    client = await kube.connect(str(admin_kubeconfig))
    try:
        sub = kube.SERVICE_ACCOUNTS.path(namespace, service_account, "token")
        answer = await client.request("POST", sub, body=request)
    finally:
        await client.close()
    token = str(answer["status"]["token"])
    user = f"system:serviceaccount:{namespace}:{service_account}"
    _write_private(path, token_kubeconfig(admin_kubeconfig, user, token))
    return path


def token_kubeconfig(admin_kubeconfig: Path, user: str, token: str) -> str:
    """A kubeconfig for the cluster of `admin_kubeconfig`'s current context, as `token`."""
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": _current_cluster(admin, admin_kubeconfig)}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "cluster", "user": user}}],
        "current-context": user,
    }
    return yaml.safe_dump(config, sort_keys=False)


def _write_private(path: Path, text: str) -> None:
    """Write a file holding a credential, readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)


def _current_cluster(config: dict[str, Any], source: Path) -> dict[str, Any]:
    """The current context's cluster entry: URL and CA, a CA file inlined."""
    contexts = {c["name"]: c["context"] for c in config.get("contexts") or []}
    clusters = {c["name"]: c["cluster"] for c in config.get("clusters") or []}
    cluster = dict(clusters[contexts[config["current-context"]]["cluster"]])
    ca_file = cluster.pop("certificate-authority", None)
    if ca_file:
        ca = (source.parent / ca_file).read_bytes()  # relative paths are the kubeconfig's
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    return cluster


async def deploy_identities(
    admin_kubeconfig: Path,
    directory: Path,
    duration: timedelta = timedelta(hours=1),
    components: Sequence[str] = (),
) -> Identities:
    """Apply deploy/'s identities and write a kubeconfig for the worker's and the bridge's.

    Args:
        admin_kubeconfig: A kubeconfig allowed to apply RBAC and request tokens.
        directory: Where `worker.kubeconfig` and `bridge.kubeconfig` are written.
        duration: How long their tokens are valid.
        components: kustomize components of `deploy/components/` to add (see
            `render_identities`).
    """
    objects = await render_identities(components)
    accounts = {
        o["metadata"]["name"]: o["metadata"]["namespace"]
        for o in objects
        if o["kind"] == "ServiceAccount"
    }
    if not {WORKER, BRIDGE} <= accounts.keys():
        raise RuntimeError(f"deploy/ names the ServiceAccounts {sorted(accounts)}")
    client = await kube.connect(str(admin_kubeconfig))
    try:
        await apply_identities(client, objects)
    finally:
        await client.close()
    paths = {}
    for account in (WORKER, BRIDGE):
        path = directory / f"{account.removeprefix('kuberay-temporal-')}.kubeconfig"
        paths[account] = await service_account_kubeconfig(
            admin_kubeconfig, accounts[account], account, path, duration
        )
    return Identities(worker=paths[WORKER], bridge=paths[BRIDGE])
