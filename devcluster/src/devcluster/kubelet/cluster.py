"""What the kubelet needs from the API server it serves: pod writes and per-pod setup.

The kubelet reads through an `ObjectView` (see `devcluster.store`) and writes pods through
`PodWrites`. On devcluster's own API server both are in-process and synchronous
(`HandlerPods`: the handler's store and verbs, as the kubelet has always used them). As the
node of a real API server (`devcluster.node`) the view is a mirror fed by list+watch and the
writes go out over HTTPS in the background, in order per pod; `latest` then gives the kubelet
back the status it wrote before the watch has shown it.

`PodSetup` is what only a real node does before a pod runs: fetch the ConfigMaps and Secrets
it references (a node may not list them), mint its service-account tokens and compute the
Service environment variables. devcluster's own API server needs none of it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from devcluster import statuses
from devcluster.handler import Handler, WriteOptions
from devcluster.kinds import Kind
from devcluster.kubelet.events import PodEvent
from devcluster.store import copied

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)


class PodWrites(Protocol):
    """How the kubelet changes pods on its API server."""

    def bind(self, pod: JsonObject, node: str) -> None:
        """Bind an unscheduled pod to the node (only where no scheduler does)."""

    def write_status(self, pod: JsonObject, status: JsonObject) -> None:
        """Write a pod's status (through the `status` subresource)."""

    def remove(self, pod: JsonObject) -> None:
        """Finish a deletion: delete with grace period 0 and the pod's UID as precondition."""

    def latest(self, pod: JsonObject) -> JsonObject:
        """Return the pod with the status this kubelet last wrote for it, if any."""

    def event(self, pod: JsonObject, event: PodEvent) -> None:
        """Record an Event about the pod."""


class PodSetup(Protocol):
    """What a node of a real API server prepares for each pod (see the module docstring)."""

    async def prepare(self, pod: JsonObject) -> None:
        """Fetch what the pod references and mint its tokens, before it runs."""

    def token(self, pod: JsonObject, source: JsonObject) -> bytes | None:
        """The token of a projected `serviceAccountToken` source, once `prepare` minted it."""

    def service_env(self, pod: JsonObject) -> Mapping[str, str]:
        """The `<SVC>_SERVICE_HOST`... variables of the Services in the pod's namespace."""

    def forget(self, pod: JsonObject) -> None:
        """The pod is gone: drop what was kept for it."""


class HandlerPods:
    """`PodWrites` on devcluster's own handler: synchronous, in-process."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler

    def _kind(self) -> Kind:
        kind = self.handler.kinds.get("", "v1", "pods")
        assert kind is not None
        return kind

    def bind(self, pod: JsonObject, node: str) -> None:
        """Set `spec.nodeName`, as devcluster has no scheduler."""
        bound = copied(pod)
        bound["spec"]["nodeName"] = node
        bound["metadata"].pop("resourceVersion", None)
        meta = pod["metadata"]
        try:
            self.handler.update(
                self._kind(), meta["namespace"], meta["name"], "", bound, WriteOptions()
            )
        except statuses.ApiError as err:
            log.debug("binding %s failed: %s", meta["name"], err)

    def write_status(self, pod: JsonObject, status: JsonObject) -> None:
        """Replace the status through the handler's status verb."""
        body = {**pod, "metadata": {**pod["metadata"]}, "status": status}
        body["metadata"].pop("resourceVersion", None)
        meta = pod["metadata"]
        try:
            self.handler.update(
                self._kind(), meta["namespace"], meta["name"], "status", body, WriteOptions()
            )
        except statuses.ApiError as err:
            log.debug("status of %s not written: %s", meta["name"], err)

    def remove(self, pod: JsonObject) -> None:
        """Delete with grace 0 and a UID precondition."""
        meta = pod["metadata"]
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta.get("uid")}}
        with contextlib.suppress(statuses.ApiError):
            self.handler.delete(self._kind(), meta["namespace"], meta["name"], options)

    def latest(self, pod: JsonObject) -> JsonObject:
        """The stored pod: writes here are synchronous, so it is already the latest."""
        return pod

    def event(self, pod: JsonObject, event: PodEvent) -> None:
        """Record nothing: on its own API server devcluster's kubelet never has."""
