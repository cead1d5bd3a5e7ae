"""The kubelet's writes to a real API server: in the background, in order per pod, retried.

The kubelet decides synchronously (a container started, a pod must go) and must not wait for
the network to do so, as the real kubelet's status manager does not. Per pod this keeps the
latest status to write and whether the pod is to be removed, and one task sends them in that
order: the status through the `status` subresource (a strategic-merge patch carrying the pod's
UID, so a pod recreated under the same name is never written), the Events the change records,
then the final delete with
grace period 0 and the UID as precondition. A busy or unreachable server (429, 5xx, no
connection) is asked again with a growing pause, and so is a refusal (401, 403): an API server
that has just restarted refuses until its authorizers' caches fill, and a kubelet never gives
up a pod's status or removal for that. 404 or 409 mean the pod is gone or is another pod now,
and end that pod's writes; any other refusal, or a refused Event, drops that one write. Only
the newest status is ever sent: a status is a whole state, so one that was overtaken need not
be.

Until the watch shows the written status, `latest` overlays it on the mirror's copy, so the
kubelet computes the next status from its own last one (transition times, start time) and
containers see their pod IP in the downward API at once.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from devcluster.kubelet.events import PodEvent
from devcluster.node.client import STRATEGIC_MERGE_PATCH, ApiError, Requests

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)
_RETRY_FIRST, _RETRY_MAX = 0.2, 5.0
_REFUSED_FOR_NOW = (401, 403)
"""Refusals a restarting API server gives until its authenticators and authorizers are ready."""


@dataclass
class _PodWork:
    """What is still to be written for one pod."""

    namespace: str
    name: str
    status: JsonObject | None = None  # the newest unsent status
    remove: bool = False
    events: list[JsonObject] = field(default_factory=list)  # Events still to record
    written: JsonObject | None = None  # the last status handed in (sent or not)
    wake: asyncio.Event = field(default_factory=asyncio.Event)


def _event_next(work: _PodWork) -> bool:
    """Whether the next write of this pod is an Event."""
    return work.status is None and bool(work.events)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_event(pod: JsonObject, event: PodEvent, node: str, now: str) -> JsonObject:
    """The core/v1 Event a kubelet records about a pod."""
    meta = pod["metadata"]
    involved = {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
    }
    if event.field_path:
        involved["fieldPath"] = event.field_path
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": involved,
        "type": event.type,
        "reason": event.reason,
        "message": event.message,
        "source": {"component": "kubelet", "host": node},
        "reportingComponent": "kubelet",
        "reportingInstance": node,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    """The REST path of one pod, or of one of its subresources."""
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    return f"{path}/{sub}" if sub else path


def status_patch(status: JsonObject) -> JsonObject:
    """A strategic-merge patch that makes the pod's status `status`.

    Conditions merge by type, so those others own (DisruptionTarget, readiness gates) stay;
    the pod and host IP lists, merged by IP, would keep a pod's old IP beside its new one
    after a node restart, so they are replaced whole.
    """
    patch = dict(status)
    for key in ("podIPs", "hostIPs"):
        if key in patch:
            patch[key] = [*patch[key], {"$patch": "replace"}]
    return patch


class ApiPodWrites:
    """`PodWrites` for a real API server (see the module docstring)."""

    def __init__(self, client: Requests, node: str) -> None:
        self.client, self.node = client, node
        self._work: dict[str, _PodWork] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def bind(self, pod: JsonObject, node: str) -> None:
        """Never called: the real scheduler binds."""
        raise NotImplementedError("kube-scheduler binds pods on a real control plane")

    def write_status(self, pod: JsonObject, status: JsonObject) -> None:
        """Queue `status` as the pod's next status; it replaces any not sent yet."""
        work = self._for(pod)
        if work is None or work.written == status:
            return
        work.written = status
        work.status = status
        work.wake.set()

    def remove(self, pod: JsonObject) -> None:
        """Queue the final delete, after any status still to be written."""
        work = self._for(pod)
        if work is not None:
            work.remove = True
            work.wake.set()

    def event(self, pod: JsonObject, event: PodEvent) -> None:
        """Queue an Event about the pod, recorded after the status queued before it."""
        work = self._for(pod)
        if work is not None:
            work.events.append(pod_event(pod, event, self.node, _now()))
            work.wake.set()

    def latest(self, pod: JsonObject) -> JsonObject:
        """The pod with the status last handed in for it."""
        work = self._work.get(pod["metadata"].get("uid", ""))
        if work is None or work.written is None or pod.get("status") == work.written:
            return pod
        return {**pod, "status": work.written}

    def pending(self, uid: str) -> bool:
        """Whether a write for this pod is still to be sent."""
        work = self._work.get(uid)
        task = self._tasks.get(uid)
        waiting = work is not None and bool(work.status is not None or work.events or work.remove)
        return waiting and task is not None and not task.done()

    def forget(self, uid: str) -> None:
        """The pod is gone: stop writing for it."""
        self._work.pop(uid, None)
        task = self._tasks.pop(uid, None)
        if task is not None:
            task.cancel()

    async def close(self) -> None:
        """Stop every pending write."""
        for uid in list(self._tasks):
            self.forget(uid)

    def _for(self, pod: JsonObject) -> _PodWork | None:
        meta = pod["metadata"]
        uid = meta.get("uid", "")
        if not uid:
            return None
        work = self._work.get(uid)
        if work is None:
            work = self._work[uid] = _PodWork(meta["namespace"], meta["name"])
            self._tasks[uid] = asyncio.create_task(self._send(uid, work))
        return work

    async def _send(self, uid: str, work: _PodWork) -> None:
        """Send what is queued for one pod, in order, until the pod is gone."""
        while True:
            await work.wake.wait()
            work.wake.clear()
            delay = _RETRY_FIRST
            while work.status is not None or work.events or work.remove:
                try:
                    if not await self._send_next(uid, work):
                        return
                    delay = _RETRY_FIRST
                except ApiError as err:
                    if err.code in (404, 409):  # gone, or another pod by that name now
                        log.debug("pod %s/%s: %s; no more writes", work.namespace, work.name, err)
                        work.status, work.events, work.remove = None, [], False
                        return
                    # An Event is best effort; a status or the removal is the pod's own state.
                    refused_for_now = err.code in _REFUSED_FOR_NOW and not _event_next(work)
                    if refused_for_now:
                        log.warning("pod %s/%s: %s; asking again", work.namespace, work.name, err)
                    if err.retryable or refused_for_now:
                        await asyncio.sleep(delay)
                        delay = min(delay * 2, _RETRY_MAX)
                        continue
                    log.warning("pod %s/%s: write refused: %s", work.namespace, work.name, err)
                    self._drop_next(work)

    async def _send_next(self, uid: str, work: _PodWork) -> bool:
        """Send the first thing queued; return False once the pod is removed."""
        if work.status is not None:
            status = work.status
            await self._patch_status(uid, work, status)
            if work.status is status:
                work.status = None
        elif work.events:
            path = f"/api/v1/namespaces/{work.namespace}/events"
            await self.client.request("POST", path, work.events[0])
            work.events.pop(0)
        else:
            await self._delete(uid, work)
            work.remove = False
            return False
        return True

    @staticmethod
    def _drop_next(work: _PodWork) -> None:
        """Give up on the first thing queued (the server refused it for good)."""
        if work.status is not None:
            work.status = None
        elif work.events:
            work.events.pop(0)
        else:
            work.remove = False

    async def _patch_status(self, uid: str, work: _PodWork, status: JsonObject) -> None:
        body = {"metadata": {"uid": uid}, "status": status_patch(status)}
        await self.client.request(
            "PATCH",
            pod_path(work.namespace, work.name, "status"),
            body,
            content_type=STRATEGIC_MERGE_PATCH,
        )

    async def _delete(self, uid: str, work: _PodWork) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": uid},
        }
        await self.client.request("DELETE", pod_path(work.namespace, work.name), body)
