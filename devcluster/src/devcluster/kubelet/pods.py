"""The process runtime: a pod's containers as local processes, as the kubelet runs them.

Per pod: a network namespace with the pod IP, the volumes, then the init containers one after
another (each must exit 0; native sidecars, init containers with `restartPolicy: Always`, only
need to start), then every container at once. Each container is a loop: start, probe, wait for
the exit, restart as `restartPolicy` says with the crash-loop back-off. Deletion stops the
containers with SIGTERM and SIGKILL after the grace period; sidecars stop last.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from devcluster.kubelet import envs, images, logs, network, status, volumes
from devcluster.kubelet.probes import ProbeSpec, ProbeTracker, probe
from devcluster.kubelet.processes import ContainerProcess
from devcluster.kubelet.runtime import ExecTarget, PodContext
from devcluster.kubelet.status import RUNNING, TERMINATED, WAITING, ContainerRecord
from devcluster.lifecycle import now_rfc3339
from devcluster.networking import hosts_path
from devcluster.networking.archives import ServedArchives
from devcluster.networking.hosts import namespace_hosts_path
from devcluster.pod_api import PodApi

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)
_CONFIG_RETRY = 2.0  # seconds before retrying a container whose config could not be resolved


class ProcessRuntime:
    """The default runtime: real processes in per-pod network, mount, UTS and PID namespaces."""

    name = "process"

    def __init__(self, image_map: images.ImageMap | None = None, backoff: float = 10.0) -> None:
        self.images = image_map or images.default_image_map()
        self.backoff = backoff
        self.state_dir = Path(".")
        # Set by DevCluster once it serves pods: the `kubernetes` Service env and `ca.crt`.
        self.pod_api: PodApi | None = None
        # devcluster's own service-account files; off on a real API server's node, whose
        # ServiceAccount admission adds the projected volume itself.
        self.placeholder_token = True
        # The host's nameservers, for pods' resolv.conf once they can reach them (egress).
        self.nameservers: list[str] = []
        # Set by DevCluster or the node agent while the node serves GitHub's archives: each
        # pod's port 443 on the node is redirected to the server, and it trusts the server's CA.
        self.archives: ServedArchives | None = None
        self._pods: dict[str, ProcessPod] = {}

    def setup(self, state_dir: Path) -> None:
        """Check privileges, remove a crashed run's leftovers, create the bridge."""
        network.check_privileges()
        # The bridge stays: Services (part B) may already have put ClusterIPs on it.
        network.remove_leftovers(bridge=False)
        network.ensure_bridge()
        network.claim_bridge()
        self._open_egress()
        self.state_dir = state_dir
        hosts = hosts_path(state_dir)
        hosts.parent.mkdir(parents=True, exist_ok=True)
        if not hosts.exists():
            hosts.write_text("127.0.0.1\tlocalhost\n")

    def _open_egress(self) -> None:
        self.nameservers = []
        refused = network.ensure_egress()
        if refused is not None:
            log.warning("pods reach only the node and each other: %s", refused)
            return
        try:
            self.nameservers = network.host_nameservers(Path("/etc/resolv.conf").read_text())
        except OSError as err:
            log.warning("pods resolve only cluster names: /etc/resolv.conf: %s", err)

    def pod_hosts(self, namespace: str) -> Path:
        """The hosts file a pod of `namespace` mounts (made from the cluster's if not yet)."""
        cluster = hosts_path(self.state_dir)
        path = namespace_hosts_path(cluster, namespace)
        if not path.exists():  # the hosts writer fills it at its next change
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(cluster, path)
        return path

    def teardown(self) -> None:
        """Remove every namespace, veth and the bridge."""
        network.remove_leftovers()

    async def run_pod(self, ctx: PodContext) -> None:
        """Run one pod (see `ProcessPod`)."""
        pod = ProcessPod(self, ctx)
        self._pods[ctx.uid] = pod
        try:
            await pod.run()
        finally:
            self._pods.pop(ctx.uid, None)

    def log_file(self, ctx: PodContext, container: str, previous: bool) -> Path | None:
        """Return the current or previous attempt's log file."""
        return logs.select(ctx.pod_dir, container, previous)

    def writing(self, ctx: PodContext, container: str) -> bool:
        """Return whether the container's current process is still running."""
        pod = self._pods.get(ctx.uid)
        process = pod.processes.get(container) if pod else None
        return process is not None and process.running()

    def exec_target(self, ctx: PodContext, container: str) -> ExecTarget | None:
        """Return how to enter the container's current process, None unless it runs."""
        pod = self._pods.get(ctx.uid)
        process = pod.processes.get(container) if pod else None
        argv = process.enter_argv() if process else None
        if process is None or argv is None:
            return None
        return ExecTarget(argv, process.env)


class ProcessPod:
    """One pod's sandbox and container loops."""

    def __init__(self, runtime: ProcessRuntime, ctx: PodContext) -> None:
        self.runtime, self.ctx = runtime, ctx
        spec = ctx.pod().get("spec", {})
        self.spec = spec
        self.inits = [
            ContainerRecord(c["name"], c.get("image", "")) for c in spec.get("initContainers") or []
        ]
        self.records = [
            ContainerRecord(c["name"], c.get("image", "")) for c in spec.get("containers") or []
        ]
        for record in self.inits:
            record.reason = "PodInitializing"
        if self.inits:
            for record in self.records:
                record.reason = "PodInitializing"
        self.processes: dict[str, ContainerProcess] = {}
        self.stopping = False
        self.volumes: dict[str, Path] = {}
        self._attempts: dict[str, int] = {}
        self._changed = asyncio.Event()
        self._stopped = asyncio.Event()

    def publish(self) -> None:
        """Report the container states; the kubelet writes the pod status."""
        self.ctx.publish(self.inits, self.records)
        self._changed.set()

    async def run(self) -> None:
        """Run until the containers are done or the pod is deleted, then clean up."""
        try:
            await network.create_sandbox(self.ctx.uid, self.ctx.ip)
            await self._redirect_https()
            self.volumes = await asyncio.to_thread(self._prepare_volumes)
            self.publish()
            main = asyncio.create_task(self._lifecycle())
            deleted = asyncio.create_task(self.ctx.terminating.wait())
            await asyncio.wait({main, deleted}, return_when=asyncio.FIRST_COMPLETED)
            if deleted.done():
                await self._stop_all(self.ctx.grace())
            deleted.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await main
        finally:
            await self._kill_all()
            await network.delete_sandbox(self.ctx.uid)

    async def _redirect_https(self) -> None:
        archives = self.runtime.archives
        if archives is None:
            return
        refused = await network.https_redirect(self.ctx.uid, archives.address, archives.port)
        if refused is not None:  # the pod runs on; only the archives stay out of its reach
            log.warning("pod %s cannot reach the archives: %s", self.ctx.uid, refused)

    def _prepare_volumes(self) -> dict[str, Path]:
        claims = self.runtime.state_dir / "claims"
        api = self.runtime.pod_api
        ca_crt = api.ca_crt if api is not None else b""
        return volumes.prepare_volumes(
            self.ctx.pod(),
            self.ctx.pod_dir,
            claims,
            self.ctx.lookup,
            ca_crt=ca_crt,
            token=self.ctx.token,
            placeholder_token=self.runtime.placeholder_token,
        )

    async def _lifecycle(self) -> None:
        sidecars: list[asyncio.Task[None]] = []
        for container, record in zip(
            self.spec.get("initContainers") or [], self.inits, strict=True
        ):
            if container.get("restartPolicy") == "Always":
                sidecars.append(
                    asyncio.create_task(self._container_loop(container, record, "Always"))
                )
                while not self.stopping and not (record.state == RUNNING and record.started):
                    await self._wait_change()
                continue
            await self._container_loop(container, record, self._init_policy())
            if record.state != TERMINATED or record.exit_code != 0:
                return  # a failed init container with restartPolicy Never fails the pod
        if self.stopping:
            return
        policy = self.spec.get("restartPolicy", "Always")
        loops = [
            self._container_loop(c, r, policy)
            for c, r in zip(self.spec.get("containers") or [], self.records, strict=True)
        ]
        await asyncio.gather(*loops)
        self.stopping = True
        self._stopped.set()
        for task in sidecars:  # the main containers are done: stop the sidecars too
            await self._stop_named(task, self.ctx.grace())

    def _init_policy(self) -> str:
        # Init containers restart on failure unless the pod never restarts anything.
        return "Never" if self.spec.get("restartPolicy") == "Never" else "OnFailure"

    async def _wait_change(self) -> None:
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), 1.0)

    async def _container_loop(
        self, container: JsonObject, record: ContainerRecord, policy: str
    ) -> None:
        while not self.stopping:
            process = await self._start(container, record)
            if process is None:
                await self._sleep(_CONFIG_RETRY)
                continue
            probes = asyncio.create_task(self._probe(container, record, process))
            code = await process.wait()
            probes.cancel()
            record.state, record.exit_code = TERMINATED, code
            record.reason = "Completed" if code == 0 else "Error"
            record.finished_at, record.ready = now_rfc3339(), False
            if self.stopping or not status.should_restart(policy, code):
                self.publish()
                return
            record.last_terminated = record.terminated()
            delay = status.backoff_delay(record.restart_count, self.runtime.backoff)
            if delay > 0:
                record.state, record.reason = WAITING, "CrashLoopBackOff"
                pod_name = self.ctx.pod()["metadata"]["name"]
                record.message = (
                    f"back-off {delay:g}s restarting failed container={record.name} pod={pod_name}"
                )
            self.publish()
            await self._sleep(delay)
            record.restart_count += 1
            record.message = ""

    async def _sleep(self, seconds: float) -> None:
        # A back-off or retry wait that ends early when the pod is being stopped.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopped.wait(), seconds)

    def _environment(
        self, container: JsonObject
    ) -> tuple[dict[str, str], list[str], images.ImageEnvironment]:
        image = self.runtime.images.lookup(container.get("image", ""))
        pod = self.ctx.pod()
        base = {"PATH": images.path_for(image), "HOME": image.home, **dict(image.env)}
        base["HOSTNAME"] = hostname(pod)
        base.update(self.ctx.service_env())  # a real API server's node: Service links
        if self.runtime.pod_api is not None:  # always, as kubelet does, despite enableServiceLinks
            base.update(self.runtime.pod_api.env())
        if self.runtime.archives is not None:  # the image's trust store, the node's CA in it
            base.update(self.runtime.archives.env())
        env = envs.container_env(pod, container, self._text_lookup, base, os.cpu_count() or 1)
        command = images.command_line(
            image, container.get("command") or [], container.get("args") or []
        )
        return env, envs.argv(command, env), image

    def _text_lookup(self, kind: str, name: str) -> Mapping[str, str] | None:
        data = self.ctx.lookup(kind, name)
        return None if data is None else {k: v.decode(errors="replace") for k, v in data.items()}

    async def _start(
        self, container: JsonObject, record: ContainerRecord
    ) -> ContainerProcess | None:
        name = container["name"]
        try:
            env, argv, image = self._environment(container)
            if not argv:  # a real image would supply its ENTRYPOINT; an unmapped one has none
                raise envs.ConfigError(
                    f"no command specified, and the image {container.get('image', '')!r} has "
                    "no local stand-in that supplies one"
                )
            missing = images.missing_program(image, container.get("image", ""))
            if missing is not None:
                raise images.MissingProgram(missing)
            script = self._script(container, env, self._attempts.get(name, -1) + 1)
        except (envs.ConfigError, volumes.VolumeError, images.MissingProgram) as err:
            reason = "CreateContainerError"  # as a kubelet for an image it cannot run
            if not isinstance(err, images.MissingProgram):
                reason = "CreateContainerConfigError"
            record.state, record.reason, record.message = WAITING, reason, str(err)
            self.publish()
            return None
        attempt = self._attempts[name] = self._attempts.get(name, -1) + 1
        process = await ContainerProcess.start(
            network.netns_path(self.ctx.uid),
            script,
            argv,
            env,
            logs.log_path(self.ctx.pod_dir, name, attempt),
        )
        self.processes[name] = process
        record.state, record.reason, record.message = RUNNING, "", ""
        record.started_at, record.container_id = (
            now_rfc3339(),
            f"devcluster://{self.ctx.uid[:8]}-{name}-{attempt}",
        )
        record.started = "startupProbe" not in container
        record.ready = record.started and "readinessProbe" not in container
        self.publish()
        return process

    def _script(self, container: JsonObject, env: Mapping[str, str], attempt: int) -> str:
        pod_dir = self.ctx.pod_dir
        # A restarted container starts from a clean /tmp, as from a fresh writable layer.
        tmp = pod_dir / "containers" / container["name"] / f"tmp-{attempt}"
        tmp.mkdir(parents=True, exist_ok=True)
        (pod_dir / "home").mkdir(parents=True, exist_ok=True)
        namespace = self.ctx.pod()["metadata"].get("namespace", "default")
        resolv = volumes.resolv_conf(namespace, self.runtime.nameservers)
        (pod_dir / "resolv.conf").write_text(resolv)
        mounts = volumes.container_mounts(container, self.volumes, pod_dir)
        image = self.runtime.images.lookup(container.get("image", ""))
        images.write_profile(image, pod_dir / "home")
        if all(m.target.rstrip("/") != image.home for m in mounts):  # the per-pod home
            mounts.insert(0, volumes.Mount("home", image.home))
        for directory in image.directories:  # as the image's own, empty at first
            if all(m.target.rstrip("/") != directory for m in mounts):
                source = pod_dir / "image" / container["name"] / directory.strip("/")
                source.mkdir(parents=True, exist_ok=True)
                mounts.insert(0, volumes.Mount(os.path.relpath(source, pod_dir), directory))
        archives = self.runtime.archives
        if archives is not None:  # the image's own file: a volume mounted over it still wins
            bundle = os.path.relpath(archives.bundle, pod_dir)
            mounts.insert(
                0, volumes.Mount(bundle, archives.trust_store, read_only=True, is_file=True)
            )
        hosts_file = self.runtime.pod_hosts(namespace)
        hosts = os.path.relpath(hosts_file, pod_dir)
        workdir = container.get("workingDir") or image.workdir or env.get("HOME", "/")
        return volumes.mount_script(
            pod_dir,
            os.path.relpath(tmp, pod_dir),
            mounts,
            hosts,
            hostname(self.ctx.pod()),
            workdir,
            host_paths=list(dict.fromkeys([sys.prefix, *image.path_prefix])),
        )

    async def _probe(
        self, container: JsonObject, record: ContainerRecord, process: ContainerProcess
    ) -> None:
        started = time.monotonic()
        trackers = {
            kind: ProbeTracker(ProbeSpec.parse(container[kind]), started, kind == "livenessProbe")
            for kind in ("startupProbe", "readinessProbe", "livenessProbe")
            if container.get(kind)
        }
        env, _, _ = self._environment(container)

        async def run_exec(argv: Sequence[str], limit: float) -> int:
            return await process.exec(argv, env, limit)

        while process.running():
            now = time.monotonic()
            active = ["startupProbe"] if not record.started else ["readinessProbe", "livenessProbe"]
            for kind in (k for k in active if k in trackers and trackers[k].due(now)):
                tracker = trackers[kind]
                ok = await probe(
                    tracker.spec.action, self.ctx.ip, container, tracker.spec.timeout, run_exec
                )
                if not tracker.record(ok, time.monotonic()):
                    continue
                if kind == "readinessProbe":
                    record.ready = tracker.result
                    self.publish()
                elif kind == "startupProbe":
                    record.started, record.ready = True, "readinessProbe" not in trackers
                    self.publish()
                else:  # a failed liveness (or startup) probe: the kubelet kills the container
                    log.info(
                        "%s/%s failed liveness probe, restarting",
                        self.ctx.pod()["metadata"]["name"],
                        record.name,
                    )
                    await process.stop(self._kill_grace(container))
                    return
            pending = [t.next_at() for k, t in trackers.items() if k in active]
            await asyncio.sleep(
                max(0.05, min([*pending, time.monotonic() + 1.0]) - time.monotonic())
            )

    def _kill_grace(self, container: JsonObject) -> float:
        probe_grace = (container.get("livenessProbe") or {}).get("terminationGracePeriodSeconds")
        return float(
            probe_grace
            if probe_grace is not None
            else self.spec.get("terminationGracePeriodSeconds", 30)
        )

    async def _stop_all(self, grace: float) -> None:
        self.stopping = True
        self._stopped.set()
        sidecar_names = {
            c["name"]
            for c in self.spec.get("initContainers") or []
            if c.get("restartPolicy") == "Always"
        }
        main = [p for n, p in self.processes.items() if n not in sidecar_names and p.running()]
        started = time.monotonic()
        await asyncio.gather(*(p.stop(grace) for p in main))
        rest = max(0.0, grace - (time.monotonic() - started))
        await asyncio.gather(*(p.stop(rest) for p in self.processes.values() if p.running()))

    async def _stop_named(self, task: asyncio.Task[None], grace: float) -> None:
        for name, process in self.processes.items():
            if process.running() and any(
                c["name"] == name and c.get("restartPolicy") == "Always"
                for c in self.spec.get("initContainers") or []
            ):
                await process.stop(grace)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _kill_all(self) -> None:
        for process in self.processes.values():
            if process.running():
                process.kill()
        for process in self.processes.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), 5)


def hostname(pod: JsonObject) -> str:
    """Return a pod's hostname: spec.hostname, else its name (at most 63 characters)."""
    return str(pod.get("spec", {}).get("hostname") or pod["metadata"]["name"])[:63]
