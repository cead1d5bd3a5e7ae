"""The stack's cluster as a real Kubernetes control plane with devcluster's kubelet as its node.

`kuberay-temporal dev --control-plane kubernetes` runs this in place of devcluster's own API
server: etcd, kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2 (built from Go
modules once, then cached), state under `STATE/kubernetes`, and a `NodeAgent` running pods with
the chosen runtime (state under `STATE/node`). When pods have the bridge (the process runtime,
or the simulated one as root) the API server listens on the bridge address so pods reach it
through the `kubernetes` Service; otherwise on loopback. The node's Gateway data plane and
volume provisioner get their roles, our CRDs are installed as admin, and `STATE/kubeconfig` is the
admin kubeconfig, as devcluster's is. The worker and the bridge are not admins here: they
authenticate as deploy/'s ServiceAccounts, bound to exactly its ClusterRoles, so a rule missing
from deploy/ fails on this stack as it would in a cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from activities.kube.client import JSON, NAMESPACES, KubeClient, Resource
from activities.kube.client import connect as connect_kube
from activities.kube.errors import KubeConflict
from devcluster.control_plane.building import (
    KUBERAY_OPERATOR,
    KUBERAY_VERSION,
    STREAMS_SHIM,
    build,
    default_build,
)
from devcluster.control_plane.kuberay import KubeRayOperator
from devcluster.control_plane.processes import ControlPlane, Ports
from devcluster.kubelet import network
from devcluster.node import NodeAgent, NodeConfig
from devcluster.node.gateways import gateway_rbac
from devcluster.node.volumes import volume_rbac
from kuberay_temporal.crd_install import install_crds
from kuberay_temporal.service_accounts import (
    DASHBOARD_PROXY,
    DeployNotFoundError,
    Identities,
    deploy_identities,
)
from kuberay_temporal.stand_in_crds import scheduler_crds

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from kuberay_temporal.dev_stack import DevStack

TOKEN_LIFETIME = timedelta(days=365)
"""The worker's and the bridge's tokens: a dev stack is not restarted to renew them."""

_RBAC = {
    "ClusterRole": Resource("rbac.authorization.k8s.io", "v1", "clusterroles", namespaced=False),
    "ClusterRoleBinding": Resource(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", namespaced=False
    ),
}


async def apply_cluster_objects(client: KubeClient, manifests: list[JSON]) -> None:
    """Create each cluster-scoped RBAC object, or replace it when it exists."""
    for manifest in manifests:
        resource, name = _RBAC[manifest["kind"]], manifest["metadata"]["name"]
        try:
            await client.create(resource, None, manifest)
        except KubeConflict as err:
            if not err.already_exists:
                raise
            current = await client.get(resource, None, name)
            body = {**manifest, "metadata": {**manifest["metadata"]}}
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await client.request("PUT", resource.path(None, name), body=body)


def pod_network_available(runtime: str) -> bool:
    """Whether pods get the bridge: always for the process runtime, else if it can be made."""
    if runtime == "process":
        return True
    try:
        network.check_privileges()
    except network.RuntimeUnavailable:
        return False
    return True


def admin_kubeconfig(state_dir: Path, plane: ControlPlane) -> Path:
    """`STATE/kubeconfig`: the admin's (`system:masters`), for kubectl, as with devcluster."""
    path = state_dir / "kubeconfig"
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(plane.kubeconfig_path.read_text())
    return path


async def operator_identities(
    state_dir: Path, admin: Path, dashboard_access: str
) -> Identities | None:
    """Apply deploy/'s ServiceAccounts and ClusterRoles; a kubeconfig each for worker and bridge.

    The dashboard-proxy component is added when the worker reaches dashboards through the API
    server, as an installation that sets that option must add it. None outside a checkout
    (deploy/ is not installed with the package): the components then run as the admin.
    """
    components = (DASHBOARD_PROXY,) if dashboard_access == "proxy" else ()
    try:
        return await deploy_identities(
            admin, state_dir / "identities", TOKEN_LIFETIME, components=components
        )
    except DeployNotFoundError:
        return None


@dataclass
class Cluster:
    """A running control plane with its node, CRDs installed, and who may use it."""

    plane: ControlPlane
    node: NodeAgent
    config: NodeConfig
    kubeconfig: Path
    """`STATE/kubeconfig`, the admin's."""
    identities: Identities | None
    """deploy/'s ServiceAccounts' kubeconfigs; None outside a checkout."""

    @property
    def worker_kubeconfig(self) -> Path:
        """What the worker authenticates with: its ServiceAccount's, else the admin's."""
        return self.identities.worker if self.identities else self.kubeconfig

    @property
    def bridge_kubeconfig(self) -> Path:
        """What the bridge authenticates with: its ServiceAccount's, else the admin's."""
        return self.identities.bridge if self.identities else self.kubeconfig


@asynccontextmanager
async def running_cluster(
    state: Path,
    runtime: str,
    *,
    kube_port: int,
    kubelet_port: int,
    dashboard_access: str,
    ready_delay: float = NodeConfig.ready_delay,
    audit_policy: Path | None = None,
    tracer: Tracer | None = None,
    batch_scheduler: str = "",
) -> AsyncIterator[Cluster]:
    """Run the control plane (state under `STATE/kubernetes`) and its node (`STATE/node`).

    The node's Gateway data plane and volume provisioner get their roles, the CRDs are
    installed as admin (with the batch scheduler's stand-in PodGroup CRD), and deploy/'s
    identities are applied. Everything stops when the block
    ends.
    """
    bridged = pod_network_available(runtime)
    address = network.HOST_IP if bridged else "127.0.0.1"
    if bridged:  # the API server binds the bridge address, so the bridge comes first
        await asyncio.to_thread(network.ensure_bridge)
    target = default_build()
    await asyncio.to_thread(build, target)
    plane = ControlPlane(
        state / "kubernetes",
        target,
        address,
        Ports(apiserver=kube_port),
        audit_policy=audit_policy,
    )
    async with plane:
        if bridged:  # kept while the API server runs, whatever the node does with it
            network.claim_bridge(plane.pid("kube-apiserver"))
        admin = await connect_kube(str(plane.kubeconfig_path), tracer)
        try:
            await apply_cluster_objects(admin, gateway_rbac())
            await apply_cluster_objects(admin, volume_rbac())
            await install_crds(admin)
            # Nothing installs the scheduler here; its objects need their kind served.
            await install_crds(admin, manifests=scheduler_crds(batch_scheduler))
        finally:
            await admin.close()
        config = NodeConfig(
            api_url=plane.url,
            pki_dir=plane.certificates.dir,
            state_dir=state / "node",
            runtime=runtime,
            address=address,
            kubelet_port=kubelet_port,
            pod_network=bridged,
            ready_delay=ready_delay,
            streams=target.path(STREAMS_SHIM),
        )
        async with NodeAgent(config) as node:
            kubeconfig = admin_kubeconfig(state, plane)
            identities = await operator_identities(state, kubeconfig, dashboard_access)
            yield Cluster(plane, node, config, kubeconfig, identities)


async def _watch(plane: ControlPlane, stack: DevStack) -> None:
    stack.fail(f"control plane: {await plane.exited()}")


@asynccontextmanager
async def run_kubernetes(stack: DevStack) -> AsyncIterator[None]:
    """Run the control plane and its node, install the CRDs, publish a client and kubeconfig."""
    began = time.monotonic()
    tracer = stack.tracing.kube_tracer
    async with running_cluster(
        stack.temporal.state_dir,
        stack.runtime,
        kube_port=stack.kube_port,
        kubelet_port=stack.kubelet_port,
        dashboard_access=stack.settings.dashboard_access,
        tracer=tracer,
        batch_scheduler=stack.settings.batch_scheduler,
    ) as cluster:
        watcher = asyncio.create_task(_watch(cluster.plane, stack))
        try:
            async with AsyncExitStack() as clients:
                worker = cluster.worker_kubeconfig
                limit = stack.settings.kube_rate_limit
                stack.kube = await connect_kube(str(worker), tracer, limit())
                clients.push_async_callback(stack.kube.close)
                bridge = str(cluster.bridge_kubeconfig)
                stack.bridge_kube = await connect_kube(bridge, tracer, limit())
                clients.push_async_callback(stack.bridge_kube.close)
                stack.settings = stack.settings.model_copy(update={"kubeconfig": str(worker)})
                who = (
                    "deploy/'s ServiceAccounts" if cluster.identities else "admin (no deploy/ here)"
                )
                stack.running.append(
                    f"kubernetes {cluster.plane.url} (v1.37.2, node {cluster.config.name} with "
                    f"the {stack.runtime} runtime, kubelet port {cluster.node.kubelet_port}, up "
                    f"in {time.monotonic() - began:.0f} s; kubectl --kubeconfig "
                    f"{cluster.kubeconfig}; worker and bridge as {who})"
                )
                try:
                    yield
                finally:
                    stack.kube = stack.bridge_kube = None
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher


async def ensure_namespace(client: KubeClient, name: str) -> None:
    """Create the namespace unless it exists."""
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    try:
        await client.create(NAMESPACES, None, body)
    except KubeConflict as err:
        if not err.already_exists:
            raise


@asynccontextmanager
async def run_kuberay(stack: DevStack) -> AsyncIterator[None]:
    """With `--kuberay-namespace NS`, run KubeRay's own operator reconciling NS only.

    Built from its Go module on first use (several minutes), then cached beside Kubernetes'
    binaries. It runs as the admin: it is the reference to compare with, not a deployment.
    """
    namespace = stack.kuberay_namespace
    if namespace is None:
        raise RuntimeError("KubeRay's operator needs a namespace (--kuberay-namespace)")
    state = stack.temporal.state_dir
    target = default_build()
    await asyncio.to_thread(build, target, names=(KUBERAY_OPERATOR,))
    kubeconfig = state / "kubeconfig"
    admin = await connect_kube(str(kubeconfig), stack.tracing.kube_tracer)
    try:
        await ensure_namespace(admin, namespace)
    finally:
        await admin.close()
    log = state / "kuberay-operator.log"
    operator = KubeRayOperator(
        target.path(KUBERAY_OPERATOR),
        kubeconfig,
        [namespace],
        log,
        # The reference is configured as our worker is: the same batch scheduler and gates.
        batch_scheduler=stack.settings.batch_scheduler,
        feature_gates=stack.settings.feature_gates.text(),
    )
    async with operator as op:
        watcher = asyncio.create_task(op.exited())
        watcher.add_done_callback(
            lambda done: None if done.cancelled() else stack.fail(done.result())
        )
        stack.running.append(
            f"kuberay   operator {KUBERAY_VERSION} reconciling namespace {namespace} only "
            f"(metrics {op.metrics_url}, log {log})"
        )
        try:
            yield
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
