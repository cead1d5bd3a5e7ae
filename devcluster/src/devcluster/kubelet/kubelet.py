"""The kubelet controller: runs the pods bound to its node, writes status, removes them.

On devcluster's own API server it is scheduler and kubelet in one, as devcluster has one node
(`devcluster`, address 10.244.0.1): a pending pod is bound to it, gets a pod IP, and a runtime
runs its containers. As the node of a real API server (`devcluster.node`) the scheduler binds
and the kubelet only runs pods whose `spec.nodeName` is its node. Status is computed from the
runtime's container records (`status.pod_status`) and written through `PodWrites`, so
watchers see it as they would a real kubelet's. A deleted pod (deletionTimestamp set) is
stopped within its grace period and then removed with a grace-0 delete, as the real kubelet
does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from devcluster import statuses
from devcluster.handler import Handler
from devcluster.kubelet import logs, network, status, volumes
from devcluster.kubelet.cluster import HandlerPods, PodSetup, PodWrites
from devcluster.kubelet.events import killing_events, status_events
from devcluster.kubelet.runtime import ExecTarget, PodContext, Runtime
from devcluster.lifecycle import now_rfc3339
from devcluster.store import PODS, Event, ObjectView

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)
NODE_NAME = "devcluster"
GRACE_SLACK = 5.0
"""Seconds past a deleted pod's grace period before the kubelet removes it whatever runs."""


class Kubelet:
    """The node agent of devcluster's one node, over a pluggable runtime."""

    def __init__(
        self,
        runtime: Runtime,
        state_dir: Path,
        node_name: str = NODE_NAME,
        host_ip: str = network.HOST_IP,
    ) -> None:
        self.runtime = runtime
        self.state_dir = Path(state_dir)
        self.node_name = node_name
        self.host_ip = host_ip
        self.ips = network.IpAllocator(spread=runtime.name == "process")
        self._view: ObjectView | None = None
        self._writes: PodWrites | None = None
        self._setup: PodSetup | None = None
        self._binds = False
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._contexts: dict[str, PodContext] = {}
        self._finished: set[str] = set()
        self._deadlines: dict[str, asyncio.TimerHandle] = {}

    @property
    def view(self) -> ObjectView:
        """The objects the kubelet reads."""
        assert self._view is not None, "kubelet is not running"
        return self._view

    @property
    def writes(self) -> PodWrites:
        """Where the kubelet writes pods."""
        assert self._writes is not None, "kubelet is not running"
        return self._writes

    async def run(self, handler: Handler) -> None:
        """Run as devcluster's controller: its store, its verbs, binding pods itself."""
        await self.serve(handler.store, HandlerPods(handler), binds=True)

    async def serve(
        self,
        view: ObjectView,
        writes: PodWrites,
        *,
        binds: bool = False,
        setup: PodSetup | None = None,
    ) -> None:
        """Run pods until cancelled; then stop them all and tear the node down.

        Args:
            view: Pods (and the ConfigMaps and Secrets they use) as the API server has them.
            writes: Where pod binding, status and removal go.
            binds: Bind unscheduled pods to this node (no scheduler runs).
            setup: What a real API server's node prepares per pod; None on devcluster's.
        """
        self._view, self._writes, self._setup, self._binds = view, writes, setup, binds
        await asyncio.to_thread(self.runtime.setup, self.state_dir)
        queue: asyncio.Queue[Event] = asyncio.Queue()
        listener = lambda e: queue.put_nowait(e) if e.resource == PODS else None  # noqa: E731
        view.add_listener(listener)
        try:
            for pod in view.objects(PODS):
                self._react("ADDED", pod)
            while True:
                event = await queue.get()
                self._react(event.type, event.obj)
        finally:
            view.remove_listener(listener)
            await self._stop_all()
            await asyncio.to_thread(self.runtime.teardown)

    async def _stop_all(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _react(self, event_type: str, pod: JsonObject) -> None:
        meta, spec = pod["metadata"], pod.get("spec", {})
        uid, deleting = meta.get("uid", ""), bool(meta.get("deletionTimestamp"))
        if event_type == "DELETED":
            if task := self._tasks.get(uid):
                task.cancel()  # removed without waiting (grace 0): kill at once
            if deadline := self._deadlines.pop(uid, None):
                deadline.cancel()
            self._finished.discard(uid)
            if self._setup is not None:
                self._setup.forget(pod)
            return
        node = spec.get("nodeName")
        if not node and not deleting:
            if self._binds:
                self.writes.bind(pod, self.node_name)
        elif node != self.node_name:
            return
        elif deleting:
            if uid in self._contexts:
                ctx = self._contexts[uid]
                if not ctx.terminating.is_set():
                    for event in killing_events(self.writes.latest(pod)):
                        self.writes.event(pod, event)
                ctx.terminating.set()
            elif uid not in self._tasks:
                self.writes.remove(pod)
            if uid in self._tasks and uid not in self._deadlines:
                grace = float(meta.get("deletionGracePeriodSeconds") or 0)
                self._deadlines[uid] = asyncio.get_running_loop().call_later(
                    grace + GRACE_SLACK, self._force_removal, uid, pod
                )
        elif (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self._finished.add(uid)  # ended before this kubelet started: never run again
        elif uid not in self._tasks and uid not in self._finished:
            self._tasks[uid] = asyncio.create_task(self._run_pod(pod))

    def _force_removal(self, uid: str, pod: JsonObject) -> None:
        """The grace period is over: stop what still runs and remove the pod, as a kubelet.

        Whatever kept the pod (a runtime that does not stop, a start that failed while the
        pod was being deleted) must not leave it Terminating for ever.
        """
        self._deadlines.pop(uid, None)
        task = self._tasks.get(uid)
        if task is None:
            return
        log.warning("pod %s: grace period over, removing it", pod["metadata"].get("name"))
        task.cancel()
        self.writes.remove(pod)

    def _current(self, namespace: str, name: str, uid: str) -> JsonObject | None:
        pod = self.view.get(PODS, namespace, name)
        if pod is None or pod["metadata"].get("uid") != uid:
            return None
        return self.writes.latest(pod)

    def _lookup(self, namespace: str) -> Any:
        def lookup(kind: str, name: str) -> Mapping[str, bytes] | None:
            resource = "/configmaps" if kind == "configMap" else "/secrets"
            return volumes.source_data(kind, self.view.get(resource, namespace, name))

        return lookup

    async def _run_pod(self, pod: JsonObject) -> None:
        meta = pod["metadata"]
        namespace, name, uid = meta["namespace"], meta["name"], meta["uid"]
        ip = self.ips.allocate()
        ctx = PodContext(
            uid=uid,
            ip=ip,
            pod_dir=self.state_dir / "pods" / uid,
            current=lambda: self._current(namespace, name, uid),
            publish=lambda inits, records: self._publish(ctx, inits, records),
            lookup=self._lookup(namespace),
            last=pod,
        )
        if (setup := self._setup) is not None:
            ctx.token = lambda source: setup.token(ctx.pod(), source)
            ctx.service_env = lambda: setup.service_env(ctx.pod())
        self._contexts[uid] = ctx
        try:
            if self._setup is not None:
                await self._setup.prepare(ctx.pod())
            if ctx.pod()["metadata"].get("deletionTimestamp"):
                ctx.terminating.set()  # deleted before it started: nothing to run
            else:
                await self.runtime.run_pod(ctx)
            self._finished.add(uid)
            await ctx.terminating.wait()  # a completed pod stays until it is deleted
            self.writes.remove(ctx.pod())
        except Exception as err:  # a pod that cannot start must not stop the kubelet
            log.exception("pod %s/%s failed to run", namespace, name)
            self._publish_failure(ctx, str(err))
            self._finished.add(uid)
            if ctx.terminating.is_set():  # deleted meanwhile: nothing else will remove it
                self.writes.remove(ctx.pod())
        finally:
            self.ips.release(ip)
            self._contexts.pop(uid, None)
            self._tasks.pop(uid, None)
            if deadline := self._deadlines.pop(uid, None):
                deadline.cancel()
            if self._current(namespace, name, uid) is None:
                await asyncio.to_thread(shutil.rmtree, ctx.pod_dir, True)

    def _publish(
        self,
        ctx: PodContext,
        inits: Sequence[status.ContainerRecord],
        records: Sequence[status.ContainerRecord],
    ) -> None:
        pod = ctx.current()
        if pod is None:
            return
        new = status.pod_status(pod, inits, records, ctx.ip, self.host_ip, now_rfc3339())
        self._write_status(pod, new)

    def _publish_failure(self, ctx: PodContext, message: str) -> None:
        pod = ctx.current()
        if pod is not None:
            previous = pod.get("status") or {}
            self._write_status(
                pod, {**previous, "phase": "Failed", "reason": "StartError", "message": message}
            )

    def _write_status(self, pod: JsonObject, new: JsonObject) -> None:
        if pod.get("status") != new:
            for event in status_events(pod, pod.get("status") or {}, new):
                self.writes.event(pod, event)
            self.writes.write_status(pod, new)

    def pod_context(self, namespace: str, name: str, uid: str = "") -> PodContext | None:
        """Return a pod this kubelet runs (or ran and keeps until deleted), by name and UID."""
        for ctx in self._contexts.values():
            meta = ctx.last["metadata"]
            if (meta["namespace"], meta["name"]) == (namespace, name) and uid in ("", ctx.uid):
                return ctx
        return None

    def exec_target(
        self, namespace: str, name: str, container: str, uid: str = ""
    ) -> ExecTarget | None:
        """Return how to run a command in a running container of a pod on this node."""
        ctx = self.pod_context(namespace, name, uid)
        return self.runtime.exec_target(ctx, container) if ctx is not None else None

    async def serve_log(
        self, request: web.Request, pod: JsonObject, container: str
    ) -> web.StreamResponse:
        """Serve `GET pods/<name>/log` from the captured output (follow, previous, tailLines)."""
        ctx = self._contexts.get(pod["metadata"].get("uid", ""))
        previous = request.query.get("previous") in ("true", "1")
        path = self.runtime.log_file(ctx, container, previous) if ctx else None
        if path is None:
            raise statuses.bad_request(_no_log_message(pod, container, previous))
        tail = request.query.get("tailLines")
        text = await asyncio.to_thread(path.read_bytes)
        if request.query.get("follow") not in ("true", "1") or previous:
            return web.Response(
                body=logs.tail(text, int(tail) if tail else None), content_type="text/plain"
            )
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await response.write(logs.tail(text, int(tail) if tail else None))
        assert ctx is not None
        async for chunk in logs.follow(
            path, len(text), lambda: self.runtime.writing(ctx, container)
        ):
            await response.write(chunk)
        await response.write_eof()
        return response


def _no_log_message(pod: JsonObject, container: str, previous: bool) -> str:
    name = pod["metadata"]["name"]
    if previous:
        return f'previous terminated container "{container}" in pod "{name}" not found'
    return f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
