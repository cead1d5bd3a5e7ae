"""devcluster's kubelet and Service networking as the one node of a real API server.

`NodeAgent` is what a kubelet plus kube-proxy plus cluster DNS are to a real node, built from
devcluster's own parts: it registers the Node and keeps its Lease, mirrors what the node needs
(its pods, every Service and EndpointSlice) by list+watch, runs the pods the scheduler bound to
it with the chosen runtime, writes their status back, serves the kubelet API for logs, and,
when the node has the pod bridge, writes the hosts file pods resolve Service names with and
answers on every ClusterIP and serves Gateways (when the Gateway API's CRDs are installed),
and provisions local-path PersistentVolumes for claims (`volumes`). The kubelet runs as
`system:node:<node>`, the Service half as `system:kube-proxy`, the Gateway data plane and the
volume provisioner as identities of their own (`gateways`, `volumes`), so the API server's
Node authorizer, NodeRestriction and RBAC hold them to what a real node may do. With the
process runtime and the bridge it also serves KubeRay's GitHub archives to its pods
(`networking.archives`).

Start order matters: the API server must be up (it binds the bridge address when pods must
reach it, so the bridge comes first, see `network.ensure_bridge`), and pods start only once
the mirror has listed everything, so a pod never starts without its Services' names.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from devcluster.control_plane import pki
from devcluster.kubelet import Kubelet, network
from devcluster.kubelet.kubelet import NODE_NAME
from devcluster.kubelet.pods import ProcessRuntime
from devcluster.kubelet.simulated import SimulatedRuntime
from devcluster.kubelet.streams import ShimOptions, serving_kubelet_api
from devcluster.networking import hosts_path
from devcluster.networking.archives import ArchiveServer, default_archives_dir
from devcluster.networking.endpoint_slices import SLICES
from devcluster.networking.gateway import GATEWAYS, HTTPROUTES, GatewayDataPlane
from devcluster.networking.hosts import HostsWriter
from devcluster.networking.proxy_subresource import service_target
from devcluster.networking.service_proxy import ServiceProxy
from devcluster.node.client import Credentials, NodeClient
from devcluster.node.gateways import GATEWAY_IDENTITY, ApiObjectWrites
from devcluster.node.head_addresses import HeadAddresses
from devcluster.node.kubelet_api import kubelet_api_app, server_tls
from devcluster.node.mirror import Informer, Mirror, Source
from devcluster.node.pod_setup import NodePodSetup
from devcluster.node.registration import NodeSpec, Registration
from devcluster.node.volumes import PVCS, PVS, VOLUME_IDENTITY, VolumeProvisioner, claims_dir
from devcluster.node.writes import ApiPodWrites
from devcluster.pod_api import PodApi
from devcluster.store import PODS, Event

log = logging.getLogger(__name__)
KUBERNETES_SERVICE = ("10.96.0.1", 443)  # the first address of the default Service range
_START_WITHIN = 60.0


@dataclass(frozen=True)
class NodeConfig:
    """Where the API server is and what kind of node to be."""

    api_url: str
    pki_dir: Path  # the control plane's certificates (`ControlPlane.certificates.dir`)
    state_dir: Path  # pod directories, logs, the hosts file
    runtime: str = "process"
    name: str = NODE_NAME
    address: str = network.HOST_IP  # the InternalIP; the kubelet API listens here
    kubelet_port: int = 10250
    pod_network: bool = True  # the bridge exists: ClusterIPs, DNS, reachable simulated heads
    ready_delay: float = 1.0
    backoff: float = 10.0
    streams: Path | None = None
    """The kubelet-streams binary; given, it fronts the kubelet API for exec and port-forward
    (`devcluster.kubelet.streams`); None: logs only."""


class NodeAgent:
    """The node, as an async context manager (see the module docstring)."""

    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        keys = pki.Pki(config.pki_dir)
        self._keys = keys
        self.mirror = Mirror()
        self.kubelet = self._kubelet()
        self._tasks: list[asyncio.Task[None]] = []
        self._runner: web.AppRunner | None = None
        self._shim = contextlib.AsyncExitStack()
        self._clients: list[NodeClient] = []
        self._heads: HeadAddresses | None = None
        self._writes: ApiPodWrites | None = None
        self.kubelet_port = config.kubelet_port
        self.archives = ArchiveServer(default_archives_dir(), config.state_dir / "net" / "archives")

    def _client(self, identity: pki.ClientIdentity) -> NodeClient:
        pair = self._keys.client(identity)
        client = NodeClient(
            Credentials(self.config.api_url, self._keys.ca.cert, pair.cert, pair.key)
        )
        self._clients.append(client)
        return client

    def _kubelet(self) -> Kubelet:
        config = self.config
        if config.runtime == "simulated":
            return Kubelet(
                SimulatedRuntime(config.ready_delay), config.state_dir, config.name, config.address
            )
        if config.runtime != "process":
            raise ValueError(f"unknown runtime {config.runtime!r}")
        network.check_privileges()
        return Kubelet(
            ProcessRuntime(backoff=config.backoff), config.state_dir, config.name, config.address
        )

    async def __aenter__(self) -> NodeAgent:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Register, mirror, serve the kubelet API, then run pods and Service networking."""
        config = self.config
        node_client = self._client(pki.node_identity(config.name))
        proxy_client = self._client(pki.KUBE_PROXY)
        writes = self._writes = ApiPodWrites(node_client, config.name, self.mirror)
        sources = [
            (node_client, Source(PODS, "/api/v1/pods", f"spec.nodeName={config.name}")),
            (proxy_client, Source("/services", "/api/v1/services")),
            (proxy_client, Source(SLICES, "/apis/discovery.k8s.io/v1/endpointslices")),
        ]
        self.mirror.add_listener(self._on_event)
        try:
            if config.pod_network:  # the kubelet API listens on the bridge address
                await asyncio.to_thread(network.ensure_bridge)
            await self._serve_kubelet_api()
            for client, source in sources:
                self._spawn(Informer(client, self.mirror, source).run(), source.resource)
            spec = NodeSpec(config.name, config.address, self.kubelet_port, config.runtime)
            # The Lease gets connections of its own, as a kubelet's heartbeat client does:
            # queued behind a full pool of pod writes it expires under load, and the
            # node-lifecycle controller then evicts every pod on the node.
            registration = Registration(self._client(pki.node_identity(config.name)), spec)
            self._spawn(registration.run(), "registration")
            await asyncio.wait_for(self._ready(registration, sources), _START_WITHIN)
        except BaseException:
            await self.stop()
            raise
        setup = NodePodSetup(
            node_client, self.mirror, mint_tokens=isinstance(self.kubelet.runtime, ProcessRuntime)
        )
        self._configure_runtime()
        runtime = self.kubelet.runtime
        if config.pod_network and isinstance(runtime, ProcessRuntime):
            runtime.archives = await self.archives.start(network.HOST_IP)
        self._spawn(self.kubelet.serve(self.mirror, writes, setup=setup), "kubelet")
        if config.pod_network:
            hosts = HostsWriter(hosts_path(config.state_dir), node_names=self.archives.node_names)
            self._spawn(hosts.follow(self.mirror), "hosts")
            self._spawn(ServiceProxy().follow(self.mirror), "service proxy")
        self._serve_gateways()
        self._serve_volumes()
        log.info("node %s (%s runtime) on %s", config.name, config.runtime, config.api_url)

    def _serve_gateways(self) -> None:
        """Mirror Gateways and HTTPRoutes (once their CRDs exist) and serve them."""
        client = self._client(GATEWAY_IDENTITY)
        for resource in (GATEWAYS, HTTPROUTES):
            path = f"/apis/{resource.split('/')[0]}/v1/{resource.split('/')[1]}"
            source = Source(resource, path, optional=True)
            self._spawn(Informer(client, self.mirror, source).run(), resource)
        plane = GatewayDataPlane()
        self._spawn(plane.follow(self.mirror, ApiObjectWrites(client)), "gateways")

    def _serve_volumes(self) -> None:
        """Mirror claims and volumes and provision local-path volumes (see `volumes`).

        Optional as the Gateway sources are: without the provisioner's role the informers are
        refused and claims stay Pending, the node runs on.
        """
        client = self._client(VOLUME_IDENTITY)
        for resource in (PVCS, PVS):
            source = Source(resource, f"/api/v1{resource}", optional=True)
            self._spawn(Informer(client, self.mirror, source).run(), resource)
        provisioner = VolumeProvisioner(client, claims_dir(self.config.state_dir))
        self._spawn(provisioner.follow(self.mirror), "volumes")

    async def _ready(self, registration: Registration, sources: list[Any]) -> None:
        await registration.registered.wait()
        for _, source in sources:
            await self.mirror.synced(source.resource).wait()

    def _configure_runtime(self) -> None:
        runtime, config = self.kubelet.runtime, self.config
        if isinstance(runtime, ProcessRuntime):
            ca = self._keys.ca.cert.read_bytes()
            runtime.pod_api = PodApi(*self._kubernetes_service(), ca)
            runtime.placeholder_token = False
        elif isinstance(runtime, SimulatedRuntime):
            mirror = self.mirror
            runtime.ray.resolve_service = lambda ns, name, port: service_target(
                mirror, ns, name, port
            )
            if config.pod_network:
                self._heads = HeadAddresses(runtime.ray.local_address)
                runtime.addresses = self._heads
                self.kubelet.ips = network.IpAllocator(spread=True)

    def _kubernetes_service(self) -> tuple[str, int]:
        """Where pods reach the API server: the `kubernetes` Service the API server keeps."""
        found = self.mirror.get("/services", "default", "kubernetes") or {}
        spec = found.get("spec") or {}
        ports = spec.get("ports") or [{}]
        if not spec.get("clusterIP"):
            return KUBERNETES_SERVICE
        return str(spec["clusterIP"]), int(ports[0].get("port", KUBERNETES_SERVICE[1]))

    async def _serve_kubelet_api(self) -> None:
        config = self.config
        serving = self._keys.server(
            f"kubelet-{config.name}-{config.address}",
            config.name,
            dns=[config.name, "localhost"],
            ips=[config.address],
        )
        users = [pki.APISERVER_TO_KUBELET.user]
        if config.streams is not None:
            # The shim checks client certificates and serves exec and port-forward itself;
            # everything else (logs) reaches this app on loopback through it.
            shim = ShimOptions(
                binary=config.streams,
                listen=f"{config.address}:{config.kubelet_port}",
                cert=serving.cert,
                key=serving.key,
                client_ca=self._keys.ca.cert,
                backend="",
                log_file=config.state_dir / "kubelet-streams.log",
                users=users,
                groups=["system:masters"],
            )
            app = kubelet_api_app(self.mirror, self.kubelet.serve_log, None)
            served = serving_kubelet_api(app, self.kubelet, shim)
            _, self.kubelet_port = await self._shim.enter_async_context(served)
            return
        tls = server_tls(str(serving.cert), str(serving.key), str(self._keys.ca.cert))
        app = kubelet_api_app(self.mirror, self.kubelet.serve_log, users)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, config.address, config.kubelet_port, ssl_context=tls)
        await site.start()
        self.kubelet_port = int(self._runner.addresses[0][1])

    def _on_event(self, event: Event) -> None:
        if event.resource == PODS and event.type == "DELETED" and self._writes is not None:
            self._writes.forget(event.obj["metadata"].get("uid", ""))

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        async def guarded() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except Exception:  # one broken part must not take the node down
                log.exception("node part %s stopped", name)

        self._tasks.append(asyncio.create_task(guarded(), name=name))

    async def stop(self) -> None:
        """Stop pods, networking and heartbeats; close every connection."""
        for task in reversed(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self.mirror.remove_listener(self._on_event)
        await self.archives.stop()
        if self._heads is not None:
            await self._heads.close_all()
        await self._shim.aclose()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._writes is not None:
            await self._writes.close()
        for client in self._clients:
            await client.close()
        self._clients.clear()
