"""The RayService activities that talk to Ray: apply Serve, read and await its health, label heads.

Each call reaches one cluster's head through the same `DashboardConnector` the RayJob
activities use (the API server's service proxy by default, as KubeRay's
`--use-kubernetes-proxy`; direct in-cluster DNS when configured), by the head Service the
cluster owns; the head pod probed for Serve is one the cluster owns too. The Serve config is read
from the CR inside the activity and PUT from there: only its sha256 goes back, because a
`runtime_env` may hold secrets. For the same reason a rejected PUT's message has every string
under a `runtime_env` blanked before it becomes an error.

`wait_serve_healthy` is the long one: it polls inside itself, heartbeating, and returns after
N healthy polls in a row or at its bound, so the history grows with outcomes, not with polls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.builders import names
from activities.builders import rayservice as rs
from activities.dashboard.access import DashboardAccess, DashboardConnector
from activities.dashboard.client import RayDashboardClient
from activities.dashboard.contract import ServeStatus
from activities.dashboard.errors import DashboardError, DashboardRejected
from activities.dashboard.heads import head_pod_ip
from activities.dashboard.urls import pod_base_url, pod_proxied_base_url
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.vocabulary import EventType, PodPhase
from activities.rayservice import contract
from activities.rayservice.kube_effects import ServiceStore
from crds import constants as k
from crds import flags
from crds.raycluster import RayCluster
from crds.redaction import without_values
from crds.refs import ObjectRef

_ERROR_CHARS = 300


class ServeActivities:
    """Serve config, Serve status and the head's `ray.io/serve` label, per cluster."""

    def __init__(self, client: KubeClient, connector: DashboardConnector) -> None:
        self._kube = client
        self._store = ServiceStore(client)
        self._connector = connector

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration."""
        return [self.apply_serve_config, self.read_serve_status, self.wait_serve_healthy]

    @activity.defn(name=contract.APPLY_SERVE_CONFIG.name)
    async def apply_serve_config(
        self, params: contract.ApplyServeConfigInput
    ) -> contract.ApplyServeConfigResult:
        """PUT the RayService's current `serveConfigV2` (with `target_capacity` if given).

        With `keep_deployed`, the config the cluster runs goes back with the new
        `target_capacity` instead (KubeRay's applyServeTargetCapacity on the active cluster).
        """
        loaded = await self._store.load(params.ref)
        if loaded is None:
            raise ApplicationError("the RayService no longer exists", non_retryable=True)
        text = loaded[1].spec.serve_config_v2 or ""
        try:
            config = rs.parse_serve_config(text)
        except rs.ServeConfigError as err:
            raise ApplicationError(
                str(err), type="InvalidServeConfig", non_retryable=True
            ) from None
        cluster = await self._cluster(params.ref, params.cluster)
        applied = rs.serve_config_hash(text)
        try:
            async with self.open(cluster) as dashboard:
                running = await dashboard.deployed_serve_config() if params.keep_deployed else None
                if running is not None:
                    config, applied = running, ""
                await dashboard.put_serve_applications(config, params.target_capacity)
        except DashboardError as err:
            raise _failure(err, _secrets_of(config)) from None
        return contract.ApplyServeConfigResult(config_hash=applied)

    @activity.defn(name=contract.READ_SERVE_STATUS.name)
    async def read_serve_status(self, params: contract.ReadServeStatusInput) -> ServeStatus:
        """GET the declarative Serve status of one cluster."""
        cluster = await self._cluster(params.ref, params.cluster)
        try:
            async with self.open(cluster) as dashboard:
                return await dashboard.serve_applications()
        except DashboardError as err:
            raise _failure(err, []) from None

    @activity.defn(name=contract.WAIT_SERVE_HEALTHY.name)
    async def wait_serve_healthy(
        self, params: contract.WaitServeHealthyInput
    ) -> contract.ServeHealth:
        """Poll until `consecutive` healthy polls in a row, or until the bound has passed."""
        cluster = await self._cluster(params.ref, params.cluster)
        bound = time.monotonic() + max(params.bound_seconds, 0)
        streak, last = 0, ServeStatus()
        async with self.open(cluster) as dashboard:
            while True:
                try:
                    last = await dashboard.serve_applications()
                    healthy = last.all_running
                except DashboardError as err:  # not up yet, or restarting: unhealthy, go on
                    activity.logger.debug("Serve status of %s: %s", params.cluster, err)
                    healthy = False
                streak = streak + 1 if healthy else 0
                activity.heartbeat(streak)
                if streak >= params.consecutive or time.monotonic() >= bound:
                    return contract.ServeHealth(
                        healthy=healthy, consecutive_healthy=streak, status=last
                    )
                await asyncio.sleep(params.interval_seconds)

    # --- shared -------------------------------------------------------------------------------

    async def _cluster(self, ref: ObjectRef, name: str) -> RayCluster:
        obj = await self._store.owned_cluster(ref, name)
        if obj is None:
            raise ApplicationError(f"RayCluster {name} is gone", non_retryable=True)
        return RayCluster.model_validate(obj)

    def open(self, cluster: RayCluster) -> AbstractAsyncContextManager[RayDashboardClient]:
        """A dashboard client for the cluster's head Service, for an `async with` block."""
        return self._connector.open(cluster)

    async def head_serving(self, cluster: RayCluster, pod: kube.JSON) -> bool:
        """Whether the Serve proxy on the head pod answers `/-/healthz` (S6)."""
        port = rs.serve_port(cluster)
        if self._connector.access == DashboardAccess.DIRECT:
            try:  # the pod's own address, as for the dashboard: not one on the host's network
                base = pod_base_url(head_pod_ip([pod], cluster), port)
            except DashboardError as err:
                activity.logger.info("Serve proxy of %s: %s", cluster.name, err)
                return False
        else:
            host = str(self._kube.configuration.host)
            base = pod_proxied_base_url(host, cluster.namespace, pod["metadata"]["name"], port)
        async with self.open(cluster) as dashboard:
            return await dashboard.serve_proxy_healthy(base)


UPDATED_SERVE_LABEL = "UpdatedHeadPodServeLabel"
"""The Event KubeRay records on the RayService when it changes a head's `ray.io/serve`."""


class HeadLabeler:
    """Keeps a head pod's `ray.io/serve` label in line with its Serve proxy's health (S6, S7)."""

    def __init__(self, client: KubeClient, serve: ServeActivities) -> None:
        self._kube = client
        self._store = ServiceStore(client)
        self._serve = serve

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration."""
        return [self.set_head_serve_label]

    @activity.defn(name=contract.SET_HEAD_SERVE_LABEL.name)
    async def set_head_serve_label(self, params: contract.HeadServeLabelInput) -> None:
        """Probe the head's Serve proxy and write `ray.io/serve` accordingly."""
        await self.label(params.ref, params.cluster, params.exclude_head)

    async def label(self, ref: ObjectRef, cluster_name: str, exclude_head: bool) -> bool | None:
        """Set the label; the value written (None: no running head pod to label)."""
        obj = await self._store.owned_cluster(ref, cluster_name)
        if obj is None:
            return None
        cluster = RayCluster.model_validate(obj)
        selector = names.label_selector_string(names.head_pods_selector(cluster_name))
        heads = [
            p
            for p in await self._kube.list_all(kube.PODS, ref.namespace, selector)
            if not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") == PodPhase.RUNNING
            # A pod labelled as the head but not the cluster's own is not probed.
            and names.is_controlled_by(p, cluster)
        ]
        if not heads:
            return None
        head = heads[0]
        serving = False if exclude_head else await self._serve.head_serving(cluster, head)
        value = flags.text(serving)
        if (head["metadata"].get("labels") or {}).get(k.LABEL_SERVE) != value:
            pod = head["metadata"]["name"]
            patch = {"metadata": {"labels": {k.LABEL_SERVE: value}}}
            await self._kube.patch(kube.PODS, ref.namespace, pod, patch)
            activity.logger.info("%s: %s=%s", pod, k.LABEL_SERVE, value)
            # Keyed by the version patched: each change of the label is recorded once.
            key = f"serve-label/{pod}/{head['metadata'].get('resourceVersion', '')}"
            message = f'Set {k.LABEL_SERVE}="{value}" on the head pod {ref.namespace}/{pod}'
            await self._store.event(ref, EventType.NORMAL, UPDATED_SERVE_LABEL, message, key)
        return serving


def _secrets_of(config: Any) -> list[str]:
    """Every string under a `runtime_env` (env vars, URLs with tokens) in the Serve config."""
    return [s for s in _strings(config, False) if len(s) >= 4]


def _strings(data: Any, inside: bool) -> Iterator[str]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _strings(value, inside or key == "runtime_env")
    elif isinstance(data, list):
        for item in data:
            yield from _strings(item, inside)
    elif inside and isinstance(data, str):
        yield data


def _failure(err: DashboardError, secrets: list[str]) -> ApplicationError:
    """A dashboard failure for the workflow: short, typed, with no secret in it."""
    message = without_values(str(err), secrets)
    if len(message) > _ERROR_CHARS:
        message = message[:_ERROR_CHARS] + "…"
    return ApplicationError(
        message,
        type=type(err).__name__,
        non_retryable=isinstance(err, DashboardRejected),
    )
