"""DevCluster: the embeddable server, for the CLI, `kuberay-temporal dev` and tests.

It wires the pieces together (store, kind table, handler, HTTP routes), restores served CRDs
from the store, seeds the namespaces every cluster has, runs in-process controllers and
writes a kubeconfig that kubectl and kubernetes_asyncio accept as is.

Controllers are the hook for later work (process kubelet, Job controller, service proxy):
anything with `async run(handler)` is started with the server and cancelled when it stops,
and sees the cluster through the same verbs and store events as the garbage collector.

With the process kubelet the same routes are also served over HTTPS on the node's pod-network
address, for in-cluster clients such as the Ray autoscaler (see `pod_api`), unless `pod_api` is
off.

A node with the pod network also stands in for GitHub's archive downloads when KubeRay's
archives are beside the checkout (see `networking.archives`): pods fetch those zips at their
github.com URLs, and nothing else of the internet.

devcluster is for development on a machine you trust, and is not a security boundary. Neither
listener authenticates: whoever reaches the loopback port (any local account) or the
pod-facing one (any pod, any process on the host) may do anything, and the service-account
token pods get is a placeholder no one checks. Pods of the process runtime run as root in the
host's filesystem (only /tmp, /etc/hosts, /etc/resolv.conf and their volumes are their own),
so their code can read and change the host's files; a `hostPath` volume adds no access they
lack, which is why it is not switchable. `pod_api=False` (`--pod-api off`) at least keeps pod
code from driving the API server: pods then get no `KUBERNETES_SERVICE_*` env and an empty
`ca.crt`, and in-cluster clients (the Ray autoscaler) fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import yaml
from aiohttp import web

from devcluster import crds, statuses
from devcluster.builtin_kinds import builtin_kinds
from devcluster.collector import Collector
from devcluster.controllers import workload_controllers
from devcluster.endpoints import Endpoints
from devcluster.faults import Faults
from devcluster.handler import Handler, WriteOptions
from devcluster.kinds import KindTable
from devcluster.kubelet import Kubelet, make_kubelet
from devcluster.kubelet import network as pod_network_setup
from devcluster.kubelet.pods import ProcessRuntime
from devcluster.kubelet.simulated import SimulatedRuntime
from devcluster.networking import network_controllers
from devcluster.networking.archives import ArchiveServer, default_archives_dir
from devcluster.networking.proxy_subresource import ProxySubresource
from devcluster.pod_api import PodApi, server_tls
from devcluster.routes import Routes
from devcluster.store import Event, Store

log = logging.getLogger(__name__)
NAME = "devcluster"
SEEDED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_CRD_KEY = f"{crds.CRD_GROUP}/{crds.CRD_PLURAL}"


class Controller(Protocol):
    """Something that runs inside devcluster and reacts to the cluster's state."""

    async def run(self, handler: Handler) -> None:
        """Run until cancelled."""


def kubeconfig(url: str) -> str:
    """Return a kubeconfig whose cluster, user and context are all called devcluster."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": NAME, "cluster": {"server": url}}],
        "users": [{"name": NAME, "user": {}}],
        "contexts": [
            {"name": NAME, "context": {"cluster": NAME, "user": NAME, "namespace": "default"}}
        ],
        "current-context": NAME,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


class DevCluster:
    """A Kubernetes-API-compatible server on loopback, persisted under `state_dir`."""

    def __init__(
        self,
        state_dir: Path,
        port: int = 0,
        *,
        faults: Faults | None = None,
        history_limit: int = 100_000,
        bookmark_interval: float = 60.0,
        controllers: Sequence[Controller] = (),
        pod_network: bool = False,
        job_backoff: float = 10.0,
        runtime: str | None = None,
        ready_delay: float = 1.0,
        pod_api: bool = True,
    ) -> None:
        self.state_dir = Path(state_dir)
        self._serve_pod_api = pod_api
        self._port = port
        self.store = Store(self.state_dir / "devcluster.db", history_limit)
        self.kinds = KindTable(builtin_kinds())
        self.handler = Handler(self.store, self.kinds)
        self.endpoints = Endpoints(self.handler, bookmark_interval)
        self._faults = faults or Faults()
        self.faults = self._faults  # what is injected, and the counts (`Faults.snapshot`)
        # With `pod_network` (the process kubelet's bridge) Services also get DNS and ClusterIPs.
        self.proxy = ProxySubresource(self.handler, pod_network=pod_network)
        self._pod_network = pod_network
        self.archives = ArchiveServer(default_archives_dir(), self.state_dir / "net" / "archives")
        self._controllers: list[Controller] = [
            Collector(),
            *workload_controllers(job_backoff),
            *network_controllers(
                self.state_dir, pod_network=pod_network, node_names=self.archives.node_names
            ),
            *controllers,
        ]
        self._kubelet: Kubelet | None = None
        if runtime is not None:  # a node: the process kubelet, or the simulated one
            kubelet = make_kubelet(runtime, self.state_dir, ready_delay=ready_delay)
            self.endpoints.logs = kubelet.serve_log
            if isinstance(kubelet.runtime, SimulatedRuntime):  # simulated Ray heads answer
                kubelet.runtime.ray.resolve_service = self.proxy.service_target
                kubelet.runtime.ray.faults = self._faults.dashboard
                self.proxy.local = kubelet.runtime.ray.local_address
            self._controllers.append(kubelet)
            self._kubelet = kubelet
        self.pod_api: PodApi | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._runner: web.AppRunner | None = None

    @property
    def port(self) -> int:
        """The port served on (known once started)."""
        return self._port

    @property
    def url(self) -> str:
        """The server URL clients use."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def kubelet(self) -> Kubelet | None:
        """The node's kubelet; None when devcluster runs without a node."""
        return self._kubelet

    @property
    def kubeconfig_path(self) -> Path:
        """Where the kubeconfig is written."""
        return self.state_dir / "kubeconfig"

    async def start(self) -> None:
        """Open the store, start serving and write the kubeconfig."""
        self.store.open()
        for crd in self.store.objects(_CRD_KEY):
            crds.serve_crd_change(self.kinds, "ADDED", crd)
        self.store.add_listener(self._on_event)
        self._seed_namespaces()
        app = Routes(self.kinds, self.endpoints, self._faults, self.proxy).app()
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        await site.start()
        self._port = self._runner.addresses[0][1]
        runtime = self._kubelet.runtime if self._kubelet is not None else None
        if isinstance(runtime, ProcessRuntime) and self._serve_pod_api:
            await self._serve_pods(self._runner, runtime)
        if isinstance(runtime, ProcessRuntime) and self._pod_network:
            await asyncio.to_thread(pod_network_setup.ensure_bridge)
            runtime.archives = await self.archives.start(pod_network_setup.HOST_IP)
        # Controllers start once the pod-facing address is known, so no pod starts without it.
        for controller in self._controllers:
            self._tasks.append(asyncio.create_task(self._run_controller(controller)))
        self.kubeconfig_path.write_text(kubeconfig(self.url))
        log.info("devcluster serving on %s, state in %s", self.url, self.state_dir)

    async def _serve_pods(self, runner: web.AppRunner, runtime: ProcessRuntime) -> None:
        # Pods cannot reach the host's loopback; in-cluster clients (the Ray autoscaler) reach
        # the API server over HTTPS on the node's bridge address instead (see pod_api).
        host = pod_network_setup.HOST_IP
        await asyncio.to_thread(pod_network_setup.ensure_bridge)
        context, ca_crt = await asyncio.to_thread(server_tls, self.state_dir / "pki", host)
        site = web.TCPSite(runner, host, 0, ssl_context=context)
        await site.start()
        port = next(a[1] for a in runner.addresses if a[0] == host)
        self.pod_api = PodApi(host, port, ca_crt)
        runtime.pod_api = self.pod_api
        log.info("devcluster serving pods on https://%s:%d", host, port)

    async def stop(self) -> None:
        """Stop serving, end watches and controllers, and close the store."""
        if self._runner is not None:
            await self.endpoints.close_watches()
            await self._runner.cleanup()
            self._runner = None
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await self.archives.stop()
        await self.proxy.close()
        self.store.remove_listener(self._on_event)
        self.store.close()

    async def __aenter__(self) -> DevCluster:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    async def _run_controller(self, controller: Controller) -> None:
        try:
            await controller.run(self.handler)
        except asyncio.CancelledError:
            raise
        except Exception:  # a broken controller must not take the API server down
            log.exception("controller %r stopped", controller)

    def _on_event(self, event: Event) -> None:
        if event.resource == _CRD_KEY:
            crds.serve_crd_change(self.kinds, event.type, event.obj)

    def _seed_namespaces(self) -> None:
        namespaces = self.kinds.get("", "v1", "namespaces")
        assert namespaces is not None
        for name in SEEDED_NAMESPACES:
            if self.store.get(namespaces.storage_key, "", name) is None:
                body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                with contextlib.suppress(statuses.ApiError):
                    self.handler.create(namespaces, "", body, WriteOptions())
