"""The kubelet's writes to a real API server: in the background, in order per pod, retried.

The kubelet decides synchronously (a container started, a pod must go) and must not wait for
the network to do so, as the real kubelet's status manager does not. Per pod this keeps the
latest status to write and whether the pod is to be removed, and one task sends them in that
order: the status through the `status` subresource (a strategic-merge patch carrying the pod's
UID, so a pod recreated under the same name is never written), the Events the change records,
then the final delete with grace period 0 and the UID as precondition. A busy or unreachable
server (429, 5xx, no connection) is asked again with a growing pause, and so is a refusal (401,
403): an API server that has just restarted refuses until its authorizers' caches fill, and a
kubelet never gives up a pod's status or removal for that. 409 means the name holds another
pod now and ends that pod's writes; any other refusal, or a refused Event, drops that one write.
Only the newest status is ever sent: a status is a whole state, so one that was overtaken need
not be.

A pod is gone when the watch says so (`forget`), not when a delete was answered: a
kube-apiserver killed between the two steps of a delete leaves the pod with a zero grace period
and no one to finish it, and one that has just started answers 404 for a pod that exists
(NodeRestriction reads pods from a cache not yet filled). So 404 is not an end either, and a
pod still there `removal_resync` seconds after its removal was sent is removed again, as the
real kubelet's status manager does on its periodic sync.

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
from devcluster.store import PODS, ObjectView

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)
_RETRY_FIRST, _RETRY_MAX = 0.2, 5.0
_REFUSED_FOR_NOW = (401, 403)
"""Refusals a restarting API server gives until its authenticators and authorizers are ready."""
REMOVAL_RESYNC = 10.0
"""Seconds after a removal was sent before it is sent again if the pod is still there."""


@dataclass
class _PodWork:
    """What is still to be written for one pod."""

    namespace: str
    name: str
    status: JsonObject | None = None  # the newest unsent status
    remove: bool = False
    events: list[JsonObject] = field(default_factory=list)  # Events still to record
    written: JsonObject | None = None  # the last status handed in (sent or not)
    removed: bool = False  # the removal was sent (the pod may still be there)
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
    a condition's reason and message that the new status leaves out are cleared (null), or a
    Ready condition turned True would keep the reason it had while False. The pod and host IP
    lists, merged by IP, would keep a pod's old IP beside its new one after a node restart, so
    they are replaced whole.
    """
    patch = dict(status)
    if "conditions" in patch:
        patch["conditions"] = [
            {"reason": None, "message": None, **condition} for condition in patch["conditions"]
        ]
    for key in ("podIPs", "hostIPs"):
        if key in patch:
            patch[key] = [*patch[key], {"$patch": "replace"}]
    return patch


class ApiPodWrites:
    """`PodWrites` for a real API server (see the module docstring)."""

    def __init__(
        self,
        client: Requests,
        node: str,
        pods: ObjectView,
        removal_resync: float = REMOVAL_RESYNC,
    ) -> None:
        """`pods`: the pods as the watch shows them, which say whether a removed pod is gone."""
        self.client, self.node, self.pods = client, node, pods
        self.removal_resync = removal_resync
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

    def tracked(self, uid: str) -> bool:
        """Whether writes for this pod are still looked after (until it is seen gone)."""
        task = self._tasks.get(uid)
        return task is not None and not task.done()

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
        task = self._tasks.get(uid)
        if task is None or task.done():  # a sender that ended (409) is asked again
            self._tasks[uid] = asyncio.create_task(self._send(uid, work))
        return work

    async def _send(self, uid: str, work: _PodWork) -> None:
        """Send what is queued for one pod, in order, until `forget` cancels this."""
        while True:
            try:
                resync = self.removal_resync if work.removed else None
                await asyncio.wait_for(work.wake.wait(), resync)
            except TimeoutError:  # removed: gone, or still to be removed again
                if not self._watched(uid, work):
                    self._work.pop(uid, None)
                    self._tasks.pop(uid, None)
                    return
                log.info("pod %s/%s: still there; removing it again", work.namespace, work.name)
                work.remove = True
            work.wake.clear()
            delay = _RETRY_FIRST
            while work.status is not None or work.events or work.remove:
                try:
                    await self._send_next(uid, work)
                    delay = _RETRY_FIRST
                except ApiError as err:
                    if err.code == 409:  # another pod by that name now: ours is gone
                        log.debug("pod %s/%s: %s; no more writes", work.namespace, work.name, err)
                        work.status, work.events, work.remove = None, [], False
                        return
                    if err.code == 404:  # gone, or not yet known to a starting API server
                        self._drop_next(work, sent=True)
                        continue
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

    def _watched(self, uid: str, work: _PodWork) -> bool:
        """Whether the watch still shows this pod (its name holding its UID)."""
        pod = self.pods.get(PODS, work.namespace, work.name)
        return pod is not None and pod["metadata"].get("uid") == uid

    async def _send_next(self, uid: str, work: _PodWork) -> None:
        """Send the first thing queued."""
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
            work.remove, work.removed = False, True

    @staticmethod
    def _drop_next(work: _PodWork, *, sent: bool = False) -> None:
        """Give up on the first thing queued; `sent`: a removal counts as sent."""
        if work.status is not None:
            work.status = None
        elif work.events:
            work.events.pop(0)
        else:
            work.remove, work.removed = False, sent

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
