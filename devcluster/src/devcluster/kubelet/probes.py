"""Startup, readiness and liveness probes: when to probe and what a result means, and the probes.

The timing is the kubelet's prober worker: nothing before `initialDelaySeconds`, then one probe
per `periodSeconds` with `timeoutSeconds` each; the result flips only after
`successThreshold` consecutive successes or `failureThreshold` consecutive failures.
Readiness and startup start out failed, liveness out successful. `ProbeTracker` is that
decision, pure; `probe()` runs one httpGet, tcpSocket or exec check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

JsonObject = dict[str, Any]
ExecRunner = Callable[[Sequence[str], float], Awaitable[int]]  # (argv, timeout) -> exit code


@dataclass(frozen=True)
class ProbeSpec:
    """A probe's action and timings, defaulted as the API server defaults them."""

    action: JsonObject
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3

    @classmethod
    def parse(cls, probe: JsonObject) -> ProbeSpec:
        """Read a `Probe` object."""
        action = {k: v for k, v in probe.items() if k in ("httpGet", "tcpSocket", "exec", "grpc")}
        return cls(
            action=action,
            initial_delay=float(probe.get("initialDelaySeconds") or 0),
            period=float(probe.get("periodSeconds") or 10),
            timeout=float(probe.get("timeoutSeconds") or 1),
            success_threshold=int(probe.get("successThreshold") or 1),
            failure_threshold=int(probe.get("failureThreshold") or 3),
        )


class ProbeTracker:
    """The result of one probe of one container, fed with individual check outcomes."""

    def __init__(self, spec: ProbeSpec, started_at: float, initially: bool) -> None:
        self.spec = spec
        self.result = initially
        self._next = started_at + spec.initial_delay
        self._streak = 0  # consecutive outcomes that disagree with the current result

    def due(self, now: float) -> bool:
        """Return whether a check should run now."""
        return now >= self._next

    def next_at(self) -> float:
        """Return when the next check is due."""
        return self._next

    def record(self, ok: bool, now: float) -> bool:
        """Count one outcome; return whether the result changed."""
        self._next = now + self.spec.period
        if ok == self.result:
            self._streak = 0
            return False
        self._streak += 1
        needed = self.spec.success_threshold if ok else self.spec.failure_threshold
        if self._streak >= needed:
            self.result, self._streak = ok, 0
            return True
        return False


def resolve_port(port: Any, container: JsonObject) -> int:
    """Return a probe's port number, looking up a named port among the container's ports."""
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        return int(port)
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    raise ValueError(f"port {port!r} is not declared by the container")


async def probe(
    action: JsonObject, pod_ip: str, container: JsonObject, limit: float, run_exec: ExecRunner
) -> bool:
    """Run one check within `limit` seconds; any error counts as a failure, as a timeout does."""
    try:
        if "exec" in action:
            return await run_exec(action["exec"].get("command") or [], limit) == 0
        if "httpGet" in action:
            return await asyncio.wait_for(_http_get(action["httpGet"], pod_ip, container), limit)
        if "tcpSocket" in action:
            spec = action["tcpSocket"]
            host = spec.get("host") or pod_ip
            port = resolve_port(spec.get("port"), container)
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), limit)
            writer.close()
            return True
    except (OSError, ValueError, TimeoutError):
        return False
    return False  # grpc probes are not supported here


async def _http_get(spec: JsonObject, pod_ip: str, container: JsonObject) -> bool:
    host = spec.get("host") or pod_ip
    port = resolve_port(spec.get("port"), container)
    path = spec.get("path") or "/"
    if spec.get("scheme", "HTTP").upper() != "HTTP":
        return False  # HTTPS probes are not supported here
    headers = {"Host": f"{host}:{port}", "User-Agent": "kube-probe/1.37", "Accept": "*/*"}
    headers.update({h["name"]: h["value"] for h in spec.get("httpHeaders") or []})
    reader, writer = await asyncio.open_connection(host, port)
    try:
        request = f"GET {path} HTTP/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        writer.write((request + "\r\n").encode())
        await writer.drain()
        line = await reader.readline()
    finally:
        writer.close()
    parts = line.decode("latin-1").split()
    return len(parts) >= 2 and parts[1].isdigit() and 200 <= int(parts[1]) < 400
