"""Which watch events matter, and to which workflow: a pure function over event and memory.

The rules:

* A ray.io CR nudges its own workflow when its generation grows (`spec_changed`), when a label
  or annotation changes (`spec_changed` with `resync`: KubeRay also reacts to those), when a
  deletionTimestamp appears (`deleted`) and when it disappears (`deleted`, gone). Status-only
  writes — ours — change none of these, so they never reach Temporal.
* A RayCluster owned by a RayJob or RayService also nudges its owner (`owned_changed`) when
  its status says something new (state, conditions, head address): the owner waits on it. Its
  first sight without a status does not: the owner has just created it.
* A pod nudges its RayCluster's workflow when the pod as that workflow reads it changes
  (`activities.contract.summarize_pod`: phase, readiness, the first unready container, IP,
  deletion; of a worker, not what no decision reads of it, `WORKER_UNREAD`, unless its mTLS
  certificate must name its IP), not when it first appears just created — the workflow
  created it and expects it.
  A submitter Job nudges its RayJob when its counts or conditions change. A head pod of a
  RayService's or a SidecarMode RayJob's cluster nudges that owner too when its containers
  change (SidecarMode reads the submitter container there; the other modes never look).
* Nothing more goes to a workflow whose CR is gone: a cascade deletes its pods after it.
* Objects `managedBy` MultiKueue are left alone, as KubeRay leaves them.
* An ownerReference is only a claim: whoever creates a pod, a Job or a RayCluster writes it, and
  may name any kind, name and uid. A nudge goes only to a CR the bridge has seen exist and not
  yet seen deleted (`Memory.live`), so a forged or stale owner starts no workflow; what names
  another is dropped and logged at debug level (a tenant could make thousands).

`Memory` holds what was last signalled per object uid; it is a cache, not a source of truth: a
restarted bridge starts empty and re-signals everything, which workflows shrug off.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from activities.contract import WORKER_UNREAD, PodView, summarize_pod
from activities.kube.recent import version_of
from activities.kube.vocabulary import WatchEventType
from crds.constants import (
    CONTAINER_WAIT_FOR_IP_SAN,
    LABEL_CLUSTER,
    LABEL_NODE_TYPE,
    MANAGED_BY_MULTIKUEUE,
)
from crds.enums import JobSubmissionMode, RayNodeType
from crds.refs import ObjectRef
from workflows import messages

logger = logging.getLogger(__name__)

JSON = dict[str, Any]
Signal = messages.SpecChanged | messages.OwnedChanged | messages.Deleted


@dataclass(frozen=True)
class Nudge:
    """One signal for one workflow."""

    target: ObjectRef
    signal: str
    payload: Signal


@dataclass
class Seen:
    """What the bridge last signalled about one object."""

    generation: int = 0
    meta: str = ""
    status: str = ""
    view: str = ""
    """A pod as its RayCluster's workflow reads it."""
    deleting: bool = False
    skipped: bool = False


@dataclass
class Memory:
    """Per-uid `Seen`, the CRs known to exist, and which workflow owns each RayCluster."""

    seen: dict[str, Seen] = field(default_factory=dict)
    cluster_owner: dict[tuple[str, str], ObjectRef] = field(default_factory=dict)
    cluster_ref: dict[tuple[str, str], ObjectRef] = field(default_factory=dict)
    not_sidecar: set[str] = field(default_factory=set)
    """The uids of RayJobs seen with another submission mode than SidecarMode."""
    live: dict[str, ObjectRef] = field(default_factory=dict)
    """The CRs seen and not seen deleted, by uid: the only owners a nudge may go to."""

    def forget(self, uid: str) -> None:
        """Drop what was seen of a CR: it is gone, and its workflow with it."""
        self.seen.pop(uid, None)
        self.not_sidecar.discard(uid)
        self.live.pop(uid, None)


def ref_of(kind: str, obj: JSON) -> ObjectRef:
    """The reference of an object as listed or watched."""
    meta = obj.get("metadata") or {}
    return ObjectRef(
        kind=kind,
        namespace=meta.get("namespace") or "default",
        name=meta.get("name") or "",
        uid=meta.get("uid") or "",
    )


def controller_of(obj: JSON) -> ObjectRef | None:
    """The owner marked `controller: true` in ownerReferences, if it is a ray.io object."""
    meta = obj.get("metadata") or {}
    for owner in meta.get("ownerReferences") or []:
        if owner.get("controller") and str(owner.get("apiVersion", "")).startswith("ray.io/"):
            return ObjectRef(
                kind=owner["kind"],
                namespace=meta.get("namespace") or "default",
                name=owner["name"],
                uid=owner["uid"],
            )
    return None


def digest(data: Any) -> str:
    """A short, stable fingerprint of JSON data."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def primary_nudges(kind: str, event: str, obj: JSON, memory: Memory) -> list[Nudge]:
    """Nudges caused by an event on a ray.io CR."""
    ref = ref_of(kind, obj)
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    seen = memory.seen.setdefault(ref.uid, Seen())
    owner = controller_of(obj) or memory.cluster_owner.get((ref.namespace, ref.name))
    if kind == "RayCluster":
        _track_cluster(ref, obj, memory, gone=event == WatchEventType.DELETED)
    if kind == "RayJob" and spec.get("submissionMode") != JobSubmissionMode.SIDECAR:
        memory.not_sidecar.add(ref.uid)
    if spec.get("managedBy") == MANAGED_BY_MULTIKUEUE:
        seen.skipped = True
        return []
    if event == WatchEventType.DELETED:
        memory.forget(ref.uid)
        gone = [Nudge(ref, messages.DELETED, messages.Deleted(gone=True))]
        if kind == "RayCluster" and (told := _status_owner(owner, ref, memory)) is not None:
            # The owner may wait on this deletion; its pods' events may come later and
            # then no longer lead to it (the cluster's owner is forgotten just above).
            versions = _version("RayCluster", obj)  # a copy this new has seen it go
            change = messages.OwnedChanged(
                kinds=["RayCluster"], names=[ref.name], versions=versions
            )
            gone.append(Nudge(told, messages.OWNED_CHANGED, change))
        return gone
    memory.live[ref.uid] = ref
    nudges = _spec_nudges(ref, obj, seen)
    if meta.get("deletionTimestamp") and not seen.deleting:
        # The API server bumps a custom resource's generation as it marks it deleted: the
        # deletion says it all (the workflow reads the CR again either way).
        seen.deleting = True
        deleted = messages.Deleted(gone=False, version=version_of(obj))
        nudges = [Nudge(ref, messages.DELETED, deleted)]
    if kind == "RayCluster":
        nudges += _owner_nudges(ref, obj, seen, memory)
    return nudges


def _spec_nudges(ref: ObjectRef, obj: JSON, seen: Seen) -> list[Nudge]:
    meta = obj.get("metadata") or {}
    generation = int(meta.get("generation") or 0)
    meta_digest = digest([meta.get("labels"), meta.get("annotations")])
    nudges: list[Nudge] = []
    version = version_of(obj)  # the worker's copy of the CR is read at least this new
    if generation > seen.generation:
        change = messages.SpecChanged(generation=generation, version=version)
        nudges.append(Nudge(ref, messages.SPEC_CHANGED, change))
    elif seen.meta and meta_digest != seen.meta:
        change = messages.SpecChanged(generation=generation, resync=True, version=version)
        nudges.append(Nudge(ref, messages.SPEC_CHANGED, change))
    seen.generation = max(seen.generation, generation)
    seen.meta = meta_digest
    return nudges


def _owner_nudges(ref: ObjectRef, obj: JSON, seen: Seen, memory: Memory) -> list[Nudge]:
    owner = _status_owner(controller_of(obj), ref, memory)
    if owner is None:  # kept unseen: an owner not known yet hears it once it is
        return []
    status = obj.get("status") or {}
    status_digest = digest({k: v for k, v in status.items() if k != "lastUpdateTime"})
    before, seen.status = seen.status, status_digest
    if status_digest == before or not (before or status):  # nothing new; just created
        return []
    versions = _version("RayCluster", obj)  # the owner reads the cluster at least this new
    change = messages.OwnedChanged(kinds=["RayCluster"], names=[ref.name], versions=versions)
    return [Nudge(owner, messages.OWNED_CHANGED, change)]


def _status_owner(owner: ObjectRef | None, cluster: ObjectRef, memory: Memory) -> ObjectRef | None:
    """The RayJob or RayService that a RayCluster's news goes to, if the bridge knows it."""
    if owner is None or owner.kind not in ("RayJob", "RayService"):
        return None
    return _live(owner, cluster, memory)


def _live(owner: ObjectRef | None, of: ObjectRef, memory: Memory) -> ObjectRef | None:
    """`owner` if it is a CR the bridge has seen exist and not seen deleted; else None.

    An owner that is not — a forged reference, a kind the bridge does not reconcile, a CR
    already gone — is logged at debug level only: a tenant may create objects naming it at will.
    """
    if owner is None or memory.live.get(owner.uid) == owner:
        return owner
    logger.debug(
        "%s names %s (uid %s) as its owner, a CR not known to exist: ignored", of, owner, owner.uid
    )
    return None


def _track_cluster(ref: ObjectRef, obj: JSON, memory: Memory, gone: bool) -> None:
    key = (ref.namespace, ref.name)
    if gone:
        memory.cluster_owner.pop(key, None)
        memory.cluster_ref.pop(key, None)
        return
    memory.cluster_ref[key] = ref
    owner = controller_of(obj)
    if owner is not None:
        memory.cluster_owner[key] = owner


def owned_nudges(kind: str, event: str, obj: JSON, memory: Memory) -> list[Nudge]:
    """Nudges caused by an event on a pod or a Job that a ray.io CR owns."""
    ref = ref_of(kind, obj)
    if event == WatchEventType.DELETED:  # forgotten whoever owned it: a cascade often
        memory.seen.pop(ref.uid, None)  # comes after its CR is gone, and the CR with it
    # Not remembered when its owner is unknown: its next event goes through once it is known.
    owner = _live(controller_of(obj) or _cluster_from_label(obj, memory), ref, memory)
    if owner is None:
        return []
    grand_owner = _head_reader(owner, ref, obj, memory)
    if event == WatchEventType.DELETED:
        news, grand_news = True, grand_owner is not None
    else:
        pod = summarize_pod(obj) if kind == "Pod" else None
        fresh = ref.uid not in memory.seen and pod is not None and _just_created(pod)
        seen = memory.seen.setdefault(ref.uid, Seen())
        fingerprint = digest(_relevant(obj))
        # What the owner's workflow reads of it: a pod's view; all of a Job's counts.
        view = digest(_as_read(pod, obj)) if pod is not None else fingerprint
        news = view != seen.view and not fresh
        grand_news = grand_owner is not None and fingerprint != seen.status and not fresh
        seen.view, seen.status = view, fingerprint
    change = messages.OwnedChanged(kinds=[kind], names=[ref.name], versions=_version(kind, obj))
    nudges = [Nudge(owner, messages.OWNED_CHANGED, change)] if news else []
    if grand_news and grand_owner is not None:
        nudges.append(Nudge(grand_owner, messages.OWNED_CHANGED, change))
    return nudges


def _head_reader(owner: ObjectRef, ref: ObjectRef, obj: JSON, memory: Memory) -> ObjectRef | None:
    """Who reads a head pod besides its RayCluster: a RayService or a SidecarMode RayJob."""
    if owner.kind != "RayCluster" or not _is_head(obj):
        return None
    reader = _live(memory.cluster_owner.get((owner.namespace, owner.name)), ref, memory)
    return None if reader is None or reader.uid in memory.not_sidecar else reader


def _version(kind: str, obj: JSON) -> dict[str, int]:
    """The object's resourceVersion as `OwnedChanged.versions` carries it (if a number)."""
    version = version_of(obj)
    return {kind: version} if version else {}


def _as_read(pod: PodView, obj: JSON) -> JSON:
    """The pod as its RayCluster's workflow reads it.

    A worker's address and why it is not ready yet matter to no decision (so a worker getting
    its IP wakes no pass), unless its mTLS certificate must name that IP before it starts.
    """
    view = pod.model_dump(mode="json")
    if pod.node_type == RayNodeType.WORKER and not _waits_for_ip_san(obj):
        for unread in WORKER_UNREAD:
            del view[unread]
    return view


def _waits_for_ip_san(obj: JSON) -> bool:
    inits = ((obj.get("spec") or {}).get("initContainers")) or []
    return any(init.get("name") == CONTAINER_WAIT_FOR_IP_SAN for init in inits)


def _just_created(pod: PodView) -> bool:
    """A pod as its create left it: pending, no address, nothing started or stopped yet."""
    started = pod.pod_ip or pod.ready_reason or pod.not_ready_container is not None
    return pod.phase in ("", "Pending") and not started and not pod.terminating


def _cluster_from_label(obj: JSON, memory: Memory) -> ObjectRef | None:
    meta = obj.get("metadata") or {}
    cluster = (meta.get("labels") or {}).get(LABEL_CLUSTER)
    if not cluster:
        return None
    return memory.cluster_ref.get((meta.get("namespace") or "default", cluster))


def _is_head(obj: JSON) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(LABEL_NODE_TYPE) == RayNodeType.HEAD)


def _relevant(obj: JSON) -> JSON:
    """The parts of a pod or Job a controller reads; everything else is noise."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    containers = [
        {
            "name": c.get("name"),
            "ready": c.get("ready"),
            "restarts": c.get("restartCount"),
            "state": {k: (v or {}).get("reason") for k, v in (c.get("state") or {}).items()},
        }
        for c in status.get("containerStatuses") or []
    ]
    conditions = [(c.get("type"), c.get("status")) for c in status.get("conditions") or []]
    return {
        "deleting": bool(meta.get("deletionTimestamp")),
        "phase": status.get("phase"),
        "ip": status.get("podIP"),
        "conditions": conditions,
        "containers": containers,
        "succeeded": status.get("succeeded"),
        "failed": status.get("failed"),
        "active": status.get("active"),
    }
