"""The bridge process: watchers feed the filter, the filter feeds the coalescer, which signals.

Restart safety comes from the shape, not from saved state: on start every watcher lists, and
every object is signalled again (workflows ignore generations they have seen); a vanished
object — deleted while no bridge watched — is noticed by comparing lists, the first list with
the CRs whose workflows Temporal says are running (a new process remembers nothing of its
own). Several replicas are
safe by idempotence: signal-with-start never starts a second workflow for an id, and a
duplicate nudge is a no-op in the workflow (tests run two bridges against one cluster).

Nudges go only to CRs the bridge has seen exist (`filtering.Memory.live`), so the watchers of
pods and Jobs start once every CR watcher has listed: a restarted bridge knows every CR before
it judges an owned object, and tells each workflow what changed while it was down. A RayCluster
listed before its RayJob or RayService keeps its news for the owner's next event, and the
owner's first signal wakes a pass that reads the cluster anyway. Later, a CR is known before
its workflow runs, and so before the pods that workflow creates. A replica whose CR watch runs
behind drops the events of a CR it does not know yet and remembers nothing of them, so their
next event goes through; the replica that started the workflow had seen the CR.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from temporalio.service import RPCError

from activities.kube.client import JSON, KubeClient
from activities.kube.spans import traceparent_of
from activities.kube.vocabulary import WatchEventType
from bridge import filtering
from bridge.filtering import Memory, Nudge
from bridge.queueing import Coalescer
from bridge.signalling import Signaller
from bridge.state_gauges import StateGauges
from bridge.targets import ALL_TARGETS, OWNER_KINDS, Target, targets_for
from bridge.watching import Watcher
from runtime.settings import Settings

logger = logging.getLogger(__name__)


@dataclass
class Bridge:
    """Everything one bridge replica runs."""

    kube: KubeClient
    signaller: Signaller
    namespaces: Sequence[str | None] = (None,)
    """Namespaces to watch; `None` means all."""
    ignored: frozenset[str] = frozenset()
    """Namespaces among those watched whose objects never reach a workflow (another operator's)."""
    targets: Sequence[Target] = ALL_TARGETS
    relist_period: float = 36000.0
    """Seconds between lists while the watches hold (`Settings.relist_seconds`)."""
    concurrency: int = 32
    window: float = 2.0
    """Seconds after a send to a workflow in which what comes for it waits and is sent as one:
    a cluster's pods turning ready one by one under load reach it in one or two signals. The
    first news after a quiet spell still goes at once. With 1,000 RayClusters applied at once,
    2 s against 1 s: all ready in 205 s (252), 134 operator CPU s (187), 4.1 status writes a
    cluster (4.8) — each pass the window saves is a workflow task, a read and often a write."""
    memory: Memory = field(default_factory=Memory)
    gauges: StateGauges = field(default_factory=StateGauges)
    """KubeRay's state gauges, kept from the watch events for `/metrics`."""
    watchers: list[Watcher] = field(default_factory=list)
    _known: dict[tuple[str, str | None], dict[str, JSON]] = field(default_factory=dict)
    coalescer: Coalescer = field(init=False)

    @classmethod
    def configured(
        cls,
        kube: KubeClient,
        signaller: Signaller,
        settings: Settings,
        gauges: StateGauges | None = None,
    ) -> Bridge:
        """The bridge `settings` describe: namespaces watched and left alone, pace, concurrency.

        Every process that runs a bridge (`kuberay-temporal bridge`, `dev`) builds it here, so
        no setting is honoured by one and forgotten by another. `gauges`: where to keep the
        state gauges, when another part of the process serves them (`dev`); else its own.
        """
        return cls(
            kube,
            signaller,
            namespaces=settings.namespaces,
            ignored=settings.ignored_namespaces,
            relist_period=settings.relist_seconds,
            targets=targets_for(settings.feature_gates),
            concurrency=settings.bridge_concurrency,
            gauges=StateGauges() if gauges is None else gauges,
        )

    def __post_init__(self) -> None:
        self.coalescer = Coalescer(
            self.signaller.deliver, concurrency=self.concurrency, window=self.window
        )
        # CR watchers first, as they start first (`_watch`).
        ordered = sorted(self.targets, key=lambda t: not t.primary)
        self.watchers = [
            Watcher(
                self.kube,
                target,
                namespace,
                self._on_event,
                self._on_listed,
                relist_period=self.relist_period,
            )
            for target in ordered
            for namespace in self.namespaces
        ]

    async def run(self) -> None:
        """Run until cancelled."""
        await self._recall()
        async with asyncio.TaskGroup() as group:
            group.create_task(self.coalescer.run())
            for watcher in self.watchers:
                group.create_task(self._watch(watcher))

    async def _watch(self, watcher: Watcher) -> None:
        """Run one watcher; one of owned objects once every CR watcher has listed.

        Pods and Jobs are mapped to workflows through the CRs they belong to, and one whose CR
        is not known yet is dropped: listed first, a restarted bridge's pods would be. Only the
        kinds that own pods and Jobs are waited for: a RayCronJob owns neither, and a cluster
        without its (newer) CRD still has its pods watched.
        """
        if not watcher.target.primary:
            owners = [w.listed.wait() for w in self.watchers if w.target.kind in OWNER_KINDS]
            await asyncio.gather(*owners)
        await watcher.run()

    async def _recall(self) -> None:
        """Know the CRs whose workflows run, so the first list notices those that are gone."""
        for target in self.targets:
            if not target.primary:
                continue
            for namespace in self.namespaces:
                try:
                    refs = await self.signaller.running(target.kind, namespace)
                except RPCError as err:  # the workflows' own resync still notices, later
                    logger.warning("cannot list running %s workflows: %s", target.kind, err)
                    continue
                for ref in refs:
                    known = self._known.setdefault((target.kind, ref.namespace), {})
                    meta = {"name": ref.name, "namespace": ref.namespace, "uid": ref.uid}
                    known.setdefault(ref.uid, {"metadata": meta, "spec": {}})

    async def wait_listed(self) -> None:
        """Return once every watcher has completed its first list."""
        await asyncio.gather(*(w.listed.wait() for w in self.watchers))

    def _on_event(self, target: Target, event: str, obj: JSON) -> None:
        namespace = _namespace_of(obj)
        if namespace in self.ignored:
            return
        known = self._known.setdefault((target.kind, namespace), {})
        uid = (obj.get("metadata") or {}).get("uid", "")
        if event == WatchEventType.DELETED:
            known.pop(uid, None)
        else:
            known[uid] = _skeleton(obj)
        self.gauges.observe(target, event, obj)
        # Only a CR's own annotation names the trace of its workflow, not its pods'.
        traceparent = traceparent_of(obj) if target.primary else None
        for nudge in self._nudges(target, event, obj):
            self.coalescer.put(nudge, traceparent)

    def _on_listed(self, target: Target, namespace: str | None, items: list[JSON]) -> None:
        """Treat objects missing from a list as deleted (the watcher hands on those listed).

        An object decoded in part (nested too deep) is listed all the same: only its deeper
        parts are missing, never its uid, so its workflow is not told it is gone.
        """
        listed = {item["metadata"]["uid"] for item in items}
        for (kind, ns), known in list(self._known.items()):
            if kind != target.kind or (namespace is not None and ns != namespace):
                continue
            for uid, skeleton in list(known.items()):
                if uid not in listed:
                    self._on_event(target, WatchEventType.DELETED, skeleton)

    def _nudges(self, target: Target, event: str, obj: JSON) -> list[Nudge]:
        if target.primary:
            return filtering.primary_nudges(target.kind, event, obj, self.memory)
        return filtering.owned_nudges(target.kind, event, obj, self.memory)


def _namespace_of(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def _skeleton(obj: JSON) -> JSON:
    """What is kept of an object to signal its deletion later: identity and ownership."""
    meta = obj.get("metadata") or {}
    keep = ("name", "namespace", "uid", "labels", "ownerReferences")
    return {"metadata": {k: meta[k] for k in keep if k in meta}, "spec": {}}
