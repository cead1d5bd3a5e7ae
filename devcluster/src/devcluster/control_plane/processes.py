"""Run etcd, kube-apiserver, kube-controller-manager and kube-scheduler as one control plane.

`ControlPlane` starts them in dependency order, each as a child process logging to
`STATE/logs/<name>.log`, waits until each reports healthy, writes kubeconfigs (the admin one to
`STATE/kubeconfig`), and stops them in reverse order. Everything listens on the given address
(loopback, or the pod bridge's address when pods must reach the API server); a second start
with the same state directory finds etcd's data and the PKI and carries on where it stopped.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import os
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import yaml

from devcluster.control_plane import pki
from devcluster.control_plane.building import Build
from devcluster.parent_death import die_with_parent
from devcluster.ports import free_port

SERVICE_CIDR = "10.96.0.0/12"
"""The Services' range, the one devcluster's own API server allocates from."""
ADVERTISED_ADDRESS = "10.244.0.1"
"""The node's address on the pod network: what the `kubernetes` Service points at."""
_STOP_GRACE = 15.0


@dataclass
class Ports:
    """The ports of one control plane; 0 means a free one is picked at start."""

    apiserver: int = 6443
    etcd: int = 0
    etcd_peer: int = 0
    controller_manager: int = 0
    scheduler: int = 0

    def resolved(self) -> Ports:
        """A copy with every 0 replaced by a free port."""
        return Ports(
            *(
                port or free_port()
                for port in (
                    self.apiserver,
                    self.etcd,
                    self.etcd_peer,
                    self.controller_manager,
                    self.scheduler,
                )
            )
        )


@dataclass
class ControlPlane:
    """One Kubernetes control plane under a state directory."""

    state_dir: Path
    build: Build
    address: str = "127.0.0.1"
    ports: Ports = field(default_factory=Ports)
    service_cidr: str = SERVICE_CIDR
    """Where ClusterIPs come from; its first address is the `kubernetes` Service's."""
    audit_policy: Path | None = None
    """Given, the API server writes the audit events it selects to `audit_log_path`."""
    _processes: list[tuple[str, asyncio.subprocess.Process]] = field(default_factory=list)

    @property
    def certificates(self) -> pki.Pki:
        """The certificates under `STATE/pki`."""
        return pki.Pki(self.state_dir / "pki")

    @property
    def kubernetes_ip(self) -> str:
        """The `kubernetes` Service's ClusterIP: the first address of the Service range."""
        return str(ipaddress.ip_network(self.service_cidr)[1])

    @property
    def url(self) -> str:
        """The API server's base URL."""
        return f"https://{self.address}:{self.ports.apiserver}"

    @property
    def kubeconfig_path(self) -> Path:
        """The admin kubeconfig (`system:masters`: RBAC does not apply to it)."""
        return self.state_dir / "kubeconfig"

    @property
    def audit_log_path(self) -> Path:
        """The API server's audit log (JSON lines), written with an `audit_policy` only."""
        return self.state_dir / "logs" / "audit.log"

    async def __aenter__(self) -> ControlPlane:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start the four components, each once the one before is healthy."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "logs").mkdir(exist_ok=True)
        self.ports = self.ports.resolved()
        self.certificates.ensure_ca()
        try:
            await self._start_etcd()
            await self._start_apiserver()
            self.write_kubeconfig(pki.ADMIN, self.kubeconfig_path)
            for name, identity, port in (
                ("kube-controller-manager", pki.CONTROLLER_MANAGER, self.ports.controller_manager),
                ("kube-scheduler", pki.SCHEDULER, self.ports.scheduler),
            ):
                await self._start_component(name, identity, port)
            # Healthy is not yet working: a pod in a namespace created now is refused until
            # the ServiceAccount controller has made the namespace's `default` account, and
            # clients (KubeRay's e2e tests among them) create both at once.
            await self._healthy(
                "kube-controller-manager's ServiceAccount controller",
                f"{self.url}/api/v1/namespaces/default/serviceaccounts/default",
                self.certificates.client(pki.ADMIN),
            )
        except BaseException:
            await self.stop()
            raise

    def kubeconfig(self, identity: pki.ClientIdentity) -> str:
        """A kubeconfig that authenticates as `identity` with its client certificate."""
        pair = self.certificates.client(identity)
        return kubeconfig_text(self.url, self.certificates.ca.cert, pair)

    def write_kubeconfig(self, identity: pki.ClientIdentity, path: Path) -> None:
        """Write `kubeconfig(identity)` to `path`, readable by its owner only (it holds a key)."""
        _write_private(path, self.kubeconfig(identity))

    async def stop(self) -> None:
        """Stop every component, the last started first."""
        while self._processes:
            _, process = self._processes.pop()
            await stop_process(process, _STOP_GRACE)

    async def kill(self, name: str) -> None:
        """SIGKILL one component, as a crash would end it; `restart` brings it back."""
        for component, process in self._processes:
            if component == name and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()

    async def restart(self, name: str) -> None:
        """Start a component that is not running again, with the same ports and state."""
        if self.pid(name) is not None:
            raise RuntimeError(f"{name} is running")
        if name == "etcd":
            await self._start_etcd()
        elif name == "kube-apiserver":
            await self._start_apiserver()
        elif name == "kube-controller-manager":
            await self._start_component(name, pki.CONTROLLER_MANAGER, self.ports.controller_manager)
        elif name == "kube-scheduler":
            await self._start_component(name, pki.SCHEDULER, self.ports.scheduler)
        else:
            raise ValueError(f"no component {name!r}")

    def pid(self, name: str) -> int | None:
        """The process id of a running component (`kube-apiserver`...), None if not running."""
        for component, process in self._processes:
            if component == name and process.returncode is None:
                return process.pid
        return None

    async def exited(self) -> str:
        """Wait until a component exits on its own; say which (see `failed`)."""
        waits = [asyncio.create_task(process.wait()) for _, process in self._processes]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        return self.failed() or "a component exited"

    def failed(self) -> str | None:
        """The first component that exited on its own, with its exit code, or None."""
        for name, process in self._processes:
            if process.returncode is not None:
                return f"{name} exited with {process.returncode} (see {self._log(name)})"
        return None

    async def _start_etcd(self) -> None:
        client = f"http://127.0.0.1:{self.ports.etcd}"
        peer = f"http://127.0.0.1:{self.ports.etcd_peer}"
        await self._spawn(
            "etcd",
            "--name=default",
            f"--data-dir={self.state_dir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            "--listen-metrics-urls=",
        )
        await self._healthy("etcd", f"{client}/health", None)

    async def _start_apiserver(self) -> None:
        keys = self.certificates
        keys.ensure_ca()
        serving = keys.server(
            "apiserver",
            "kube-apiserver",
            dns=[
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                "localhost",
            ],
            ips=sorted({self.kubernetes_ip, ADVERTISED_ADDRESS, "127.0.0.1", self.address}),
        )
        to_kubelet = keys.client(pki.APISERVER_TO_KUBELET)
        audit = []
        if self.audit_policy is not None:
            audit = [
                f"--audit-policy-file={self.audit_policy}",
                f"--audit-log-path={self.audit_log_path}",
                "--audit-log-format=json",
                # batched: written off the request path, so auditing adds no request latency
                "--audit-log-mode=batch",
                # a size in MB; 0 would mean the log library's default, a rotation every 100 MB
                "--audit-log-maxsize=1000000",
            ]
        await self._spawn(
            "kube-apiserver",
            f"--etcd-servers=http://127.0.0.1:{self.ports.etcd}",
            f"--bind-address={self.address}",
            f"--advertise-address={ADVERTISED_ADDRESS}",
            f"--secure-port={self.ports.apiserver}",
            f"--tls-cert-file={serving.cert}",
            f"--tls-private-key-file={serving.key}",
            f"--client-ca-file={keys.ca.cert}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={keys.service_account_public_key}",
            f"--service-account-signing-key-file={keys.service_account_key}",
            f"--service-cluster-ip-range={self.service_cidr}",
            "--authorization-mode=Node,RBAC",
            # OwnerReferencesPermissionEnforcement as OpenShift has it: a blocking owner
            # reference needs update on the owner's finalizers, which RBAC must then grant.
            "--enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement",
            f"--kubelet-client-certificate={to_kubelet.cert}",
            f"--kubelet-client-key={to_kubelet.key}",
            "--kubelet-preferred-address-types=InternalIP",
            "--allow-privileged=true",
            "--enable-aggregator-routing=true",
            "--profiling=false",
            *audit,
        )
        admin = keys.client(pki.ADMIN)
        await self._healthy("kube-apiserver", f"{self.url}/readyz", admin)

    async def _start_component(self, name: str, identity: pki.ClientIdentity, port: int) -> None:
        config = self.state_dir / f"{name}.kubeconfig"
        self.write_kubeconfig(identity, config)
        args = [
            f"--kubeconfig={config}",
            f"--authentication-kubeconfig={config}",
            f"--authorization-kubeconfig={config}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--leader-elect=false",
            "--profiling=false",
        ]
        if name == "kube-controller-manager":
            keys = self.certificates
            args += [
                f"--service-account-private-key-file={keys.service_account_key}",
                f"--root-ca-file={keys.ca.cert}",
                "--use-service-account-credentials=true",
                f"--service-cluster-ip-range={self.service_cidr}",
                # Pods leave a node that stops heartbeating sooner than the 5-minute default.
                "--node-monitor-grace-period=40s",
            ]
        await self._spawn(name, *args)
        await self._healthy(name, f"https://127.0.0.1:{port}/healthz", None)

    async def _spawn(self, name: str, *args: str) -> None:
        log = self._log(name).open("ab")
        try:
            process = await asyncio.create_subprocess_exec(
                str(self.build.path(name)),
                *args,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
                env={**os.environ, "GOMAXPROCS": os.environ.get("GOMAXPROCS", "2")},
                start_new_session=True,  # Ctrl-C at the terminal is the stack's to handle
                preexec_fn=die_with_parent,  # a killed stack or test run leaves no etcd behind
            )
        finally:
            log.close()
        # A restarted component keeps its place, so `stop` still stops in reverse start order.
        names = [component for component, _ in self._processes]
        if name in names:
            self._processes[names.index(name)] = (name, process)
        else:
            self._processes.append((name, process))

    def _log(self, name: str) -> Path:
        return self.state_dir / "logs" / f"{name}.log"

    async def _healthy(
        self, name: str, url: str, client: pki.Pair | None, within: float = 120.0
    ) -> None:
        """Wait until `url` answers 200 (a component's health endpoint)."""
        context = ssl.create_default_context(cafile=str(self.certificates.ca.cert))
        if client is None:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        else:
            context.load_cert_chain(str(client.cert), str(client.key))
        deadline = time.monotonic() + within
        async with aiohttp.ClientSession() as http:
            while True:
                if (failure := self.failed()) is not None:
                    raise RuntimeError(failure)
                with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
                    ssl_arg: ssl.SSLContext | bool = context if url.startswith("https") else True
                    async with http.get(url, ssl=ssl_arg, timeout=aiohttp.ClientTimeout(5)) as r:
                        if r.status == 200:
                            return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} not healthy within {within:.0f} s ({url})")
                await asyncio.sleep(0.2)


def kubeconfig_text(server: str, ca: Path, client: pki.Pair) -> str:
    """A one-context kubeconfig with the certificates inline."""

    def inline(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {"server": server, "certificate-authority-data": inline(ca)},
            }
        ],
        "users": [
            {
                "name": "user",
                "user": {
                    "client-certificate-data": inline(client.cert),
                    "client-key-data": inline(client.key),
                },
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "user"}}],
        "current-context": "local",
    }
    return yaml.safe_dump(config, sort_keys=False)


def _write_private(path: Path, text: str) -> None:
    """Write a file that holds a private key, readable by its owner only."""
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)


async def stop_process(process: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM, then SIGKILL if it has not ended within `grace` seconds; nothing if ended."""
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), grace)
        except TimeoutError:
            process.kill()
            await process.wait()
