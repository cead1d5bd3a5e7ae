"""Where simulated Ray meets the simulated runtime's pods: heads get dashboards, submitters run.

A pod container that runs `ray start --head` (KubeRay's head, whatever its labels) gets a
`SimulatedHead` once the pod is Running, listening on loopback; `local_address` tells the API
server's service and pod proxies which loopback port stands for the pod's dashboard port
(`--dashboard-port`, else 8265) and Serve port (Serve's `http_options.port`, else 8000), so
the operator reaches it exactly as it reaches a real head. With `RAY_AUTH_MODE=token` in the
head container's environment, the simulated dashboard wants that container's `RAY_AUTH_TOKEN`
(as Ray, it does not start without one: `auth_error`).
A container that runs `ray job submit` (see `submitter`) talks to the dashboard its script
addresses: localhost is its own pod, `<svc>.<ns>.svc...` a Service resolved to a ready pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from devcluster.kubelet import envs
from devcluster.ray_simulator import submitter
from devcluster.ray_simulator.dashboard import SimulatedHead
from devcluster.ray_simulator.faults import DashboardFaults

JsonObject = dict[str, Any]
Address = tuple[str, int]
ServiceResolver = Callable[[str, str, int], Address | None]  # namespace, Service, port
Lookup = Callable[[str, str], Mapping[str, bytes] | None]
DASHBOARD_PORT = 8265
SERVE_PORT = 8000  # Serve's HTTP proxy unless its config says otherwise
_DASHBOARD_FLAG = re.compile(r"--dashboard-port[= ](\d+)")


def _script(container: JsonObject) -> str:
    return " ".join(
        str(p) for p in [*(container.get("command") or []), *(container.get("args") or [])]
    )


def head_container(pod: JsonObject) -> JsonObject | None:
    """The container that runs `ray start --head`, if any."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        script = _script(container)
        if "ray start" in script and "--head" in script:
            return dict(container)
    return None


def is_redis_cleanup(container: JsonObject) -> bool:
    """Whether the container runs Ray's `cleanup_redis_storage` (a `<cluster>-redis-cleanup` Job).

    Simulated Ray keeps nothing in Redis, so such a container succeeds at once: without that,
    the Job would run until its deadline and hold the cluster's finalizer for minutes.
    """
    return "cleanup_redis_storage" in _script(container)


def dashboard_port(container: JsonObject) -> int:
    """The dashboard port `ray start` is given (8265 unless `--dashboard-port`)."""
    found = _DASHBOARD_FLAG.search(_script(container))
    return int(found.group(1)) if found else DASHBOARD_PORT


def head_ports(container: JsonObject) -> list[int]:
    """The ports a head answers on: its declared ports, the dashboard's and Serve's (8000)."""
    declared = [int(p["containerPort"]) for p in container.get("ports") or []]
    return sorted({*declared, dashboard_port(container), SERVE_PORT})


def _text(lookup: Lookup) -> Callable[[str, str], Mapping[str, str] | None]:
    def text(kind: str, name: str) -> Mapping[str, str] | None:
        data = lookup(kind, name)
        return None if data is None else {k: v.decode(errors="replace") for k, v in data.items()}

    return text


def _env(pod: JsonObject, container: JsonObject, lookup: Lookup) -> dict[str, str]:
    try:
        return envs.container_env(pod, container, _text(lookup), {})
    except envs.ConfigError:
        return {}


def config_error(pod: JsonObject, container: JsonObject, lookup: Lookup) -> str | None:
    """Why a kubelet could not create this container (CreateContainerConfigError), or None.

    A variable from a Secret or ConfigMap (key) that does not exist and is not optional.
    """
    try:
        envs.container_env(pod, container, _text(lookup), {})
    except envs.ConfigError as err:
        return str(err)
    return None


def auth_error(container: JsonObject, pod: JsonObject, lookup: Lookup) -> str | None:
    """Why Ray would refuse to start this head: token auth without a token, or None.

    With RAY_ENABLE_K8S_TOKEN_AUTH=true (Ray 2.55 and later) the token is the pod's projected
    ServiceAccount token, which Ray reads from its file: no RAY_AUTH_TOKEN is needed.
    """
    env = _env(pod, container, lookup)
    if env.get("RAY_ENABLE_K8S_TOKEN_AUTH", "").lower() == "true":
        return None
    if env.get("RAY_AUTH_MODE") == "token" and not env.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_MODE=token needs RAY_AUTH_TOKEN, which the container does not have"
    return None


class SimulatedRay:
    """The simulated heads of one devcluster, by pod IP, and their submitters."""

    def __init__(self, serve_delay: float = 1.0) -> None:
        self.serve_delay = serve_delay
        self.resolve_service: ServiceResolver | None = None  # set by DevCluster
        self.faults: DashboardFaults | None = None  # set by DevCluster, shared by every head
        self._heads: dict[str, tuple[SimulatedHead, int]] = {}

    def local_address(self, ip: str, port: int) -> Address | None:
        """Where a simulated head's dashboard or Serve port on a pod IP really listens."""
        found = self._heads.get(ip)
        if found is None:
            return None
        head, dashboard = found
        if port == dashboard:
            return "127.0.0.1", head.ports["dashboard"]
        serve = head.serve_port()
        if serve is not None and port == head.serve.http_port:
            return "127.0.0.1", serve
        return None

    async def start_head(
        self, ip: str, pod: JsonObject, lookup: Lookup, state_file: Path | None = None
    ) -> bool:
        """Give a head pod its simulated dashboard (its state kept in `state_file`).

        Returns whether the pod is a head.
        """
        container = head_container(pod)
        if container is None:
            return False
        env = _env(pod, container, lookup)
        # The runtime starts no head without its token (`auth_error`): Ray would not start.
        token = env.get("RAY_AUTH_TOKEN") if env.get("RAY_AUTH_MODE") == "token" else None
        head = SimulatedHead(
            token=token, serve_delay=self.serve_delay, state_file=state_file, faults=self.faults
        )
        await head.start()
        self._heads[ip] = (head, dashboard_port(container))
        return True

    async def stop_head(self, ip: str) -> None:
        """The head pod is gone: its dashboard, jobs and Serve apps go with it."""
        found = self._heads.pop(ip, None)
        if found is not None:
            await found[0].stop()

    async def submit(
        self,
        ip: str,
        namespace: str,
        pod: JsonObject,
        container: JsonObject,
        lookup: Lookup,
        stopping: asyncio.Event,
        resume: bool = False,
    ) -> int:
        """Run a `ray job submit` container's script; its exit code.

        With `resume` (the script was already running when devcluster stopped) a job Ray
        already knows is followed, not submitted again: the real script would still be running.
        """
        env = _env(pod, container, lookup)
        submission = submitter.parse(container, env)
        if submission is None:
            return 2  # as bash would fail on a script it cannot run
        if resume:
            submission = dataclasses.replace(submission, check_first=True)

        def base_url() -> str | None:
            target = self._target(submission.address, ip, namespace)
            local = self.local_address(*target) if target else None
            return f"http://{local[0]}:{local[1]}" if local else None

        return await submitter.run(submission, base_url, env.get("RAY_AUTH_TOKEN"), stopping)

    def _target(self, address: str, own_ip: str, namespace: str) -> Address | None:
        parts = urlsplit(address)
        host, port = parts.hostname or "", parts.port or DASHBOARD_PORT
        if host in ("localhost", "127.0.0.1"):
            return own_ip, port
        with contextlib.suppress(ValueError):
            return str(ipaddress.ip_address(host)), port
        labels = host.split(".")
        if self.resolve_service is None:
            return None
        service_namespace = labels[1] if len(labels) > 1 else namespace
        return self.resolve_service(service_namespace, labels[0], port)
