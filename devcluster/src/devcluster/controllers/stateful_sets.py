"""The apps/v1 StatefulSet controller: pods with stable names `<set>-<ordinal>`, in order.

The persistent-Redis sample of GCS fault tolerance runs Redis as a StatefulSet; what it and
kubectl need is here: ordinals created in order, each only once the ones before it are Running
and Ready (`OrderedReady`, or all at once with `Parallel`), removed from the highest down,
`hostname`/`subdomain` set so `<pod>.<serviceName>` resolves, failed pods replaced, and a
`RollingUpdate` that replaces pods of an old template from the highest ordinal down, one at a
time. Revisions are template hashes (`<set>-<hash>`); no ControllerRevision objects are kept.
Not here: volumeClaimTemplates, partitions, `OnDelete`, `maxUnavailable`.

`decide` is pure and table-tested; `StatefulSetController` applies its plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from devcluster.controllers import pods, reconciling
from devcluster.controllers.reconciling import Key
from devcluster.handler import Handler
from devcluster.store import PODS, Event

JsonObject = dict[str, Any]
STATEFUL_SETS = "apps/statefulsets"
REVISION_LABEL = "controller-revision-hash"


@dataclass
class StatefulPlan:
    """Ordinals to create, pod names to delete, and the status to write."""

    status: JsonObject
    create: list[int] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)


def ordinal(stateful_set: JsonObject, pod: JsonObject) -> int | None:
    """Return a pod's ordinal in the set, or None if its name is not `<set>-<n>`."""
    prefix = stateful_set["metadata"]["name"] + "-"
    name = str(pod["metadata"]["name"])
    suffix = name[len(prefix) :]
    return int(suffix) if name.startswith(prefix) and suffix.isdigit() else None


def revision(stateful_set: JsonObject) -> str:
    """Return the revision name of the set's current template."""
    template = stateful_set["spec"].get("template") or {}
    return f"{stateful_set['metadata']['name']}-{pods.template_hash(template)}"


def _revision_of(pod: JsonObject) -> str:
    return str((pod["metadata"].get("labels") or {}).get(REVISION_LABEL, ""))


def _healthy(pod: JsonObject) -> bool:
    return pods.phase(pod) == "Running" and pods.is_ready(pod) and not pods.is_deleting(pod)


def decide(stateful_set: JsonObject, owned: list[JsonObject]) -> StatefulPlan:
    """Return the pods to create and delete and the status for one StatefulSet."""
    spec = stateful_set["spec"]
    wanted = int(spec.get("replicas", 1))
    ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
    update_revision = revision(stateful_set)
    by_ordinal = {n: p for p in owned if (n := ordinal(stateful_set, p)) is not None}
    plan = StatefulPlan(status={})
    # A finished pod is replaced under the same name: delete it first.
    plan.delete = [
        p["metadata"]["name"]
        for p in by_ordinal.values()
        if not pods.is_active(p) and not pods.is_deleting(p)
    ]
    for index in range(wanted):
        if index not in by_ordinal:
            plan.create.append(index)
            if ordered:
                break
        elif ordered and not _healthy(by_ordinal[index]):
            break
    surplus = sorted((n for n in by_ordinal if n >= wanted), reverse=True)
    if surplus and not plan.create:
        plan.delete += [
            by_ordinal[n]["metadata"]["name"] for n in surplus[: 1 if ordered else None]
        ]
    elif not plan.create and not plan.delete:
        plan.delete = _next_update(by_ordinal, wanted, update_revision)
    plan.status = _status(stateful_set, list(by_ordinal.values()), update_revision)
    return plan


def _next_update(by_ordinal: dict[int, JsonObject], wanted: int, update_revision: str) -> list[str]:
    # Replace one outdated pod at a time, highest ordinal first, once every pod is healthy.
    members = [by_ordinal[n] for n in range(wanted) if n in by_ordinal]
    if len(members) < wanted or not all(_healthy(p) for p in members):
        return []
    outdated = [p for p in reversed(members) if _revision_of(p) != update_revision]
    return [outdated[0]["metadata"]["name"]] if outdated else []


def _status(stateful_set: JsonObject, owned: list[JsonObject], update_revision: str) -> JsonObject:
    active = [p for p in owned if pods.is_active(p)]
    updated = sum(_revision_of(p) == update_revision for p in active)
    ready = sum(pods.is_ready(p) for p in active)
    old = stateful_set.get("status") or {}
    current_revision = old.get("currentRevision") or update_revision
    if updated == len(active) == int(stateful_set["spec"].get("replicas", 1)):
        current_revision = update_revision
    current = sum(_revision_of(p) == current_revision for p in active)
    status: JsonObject = {
        "observedGeneration": stateful_set["metadata"].get("generation", 1),
        "replicas": len(active),
        "readyReplicas": ready,
        "currentReplicas": current,
        "updatedReplicas": updated,
        "availableReplicas": ready,
        "currentRevision": current_revision,
        "updateRevision": update_revision,
        "collisionCount": 0,
    }
    return {k: v for k, v in status.items() if v or k in ("replicas", "collisionCount")}


def pod_body(stateful_set: JsonObject, index: int) -> JsonObject:
    """Return the pod for one ordinal, with its stable name, labels and DNS identity."""
    name = f"{stateful_set['metadata']['name']}-{index}"
    labels = {
        REVISION_LABEL: revision(stateful_set),
        "statefulset.kubernetes.io/pod-name": name,
        "apps.kubernetes.io/pod-index": str(index),
    }
    owner = reconciling.controller_ref(
        {**stateful_set, "apiVersion": "apps/v1", "kind": "StatefulSet"}
    )
    body = pods.from_template(stateful_set["spec"].get("template") or {}, owner, labels, name=name)
    body["spec"]["hostname"] = name
    if service := stateful_set["spec"].get("serviceName"):
        body["spec"]["subdomain"] = service
    return body


class StatefulSetController:
    """Reconciles StatefulSets against their pods."""

    resources = (STATEFUL_SETS, PODS)

    def keys_for(self, handler: Handler, event: Event) -> Iterable[Key]:
        """A StatefulSet's own events and those of its pods."""
        meta = event.obj["metadata"]
        if event.resource == STATEFUL_SETS:
            return [(meta.get("namespace", ""), meta["name"])]
        owner = reconciling.owner_key(event.obj, "StatefulSet")
        return [owner] if owner else []

    def reconcile(self, handler: Handler, key: Key) -> float | None:
        """Create and delete pods and write status for one StatefulSet."""
        store = handler.store
        stateful_set = store.get(STATEFUL_SETS, *key)
        if stateful_set is None or stateful_set["metadata"].get("deletionTimestamp"):
            return None
        owned = reconciling.owned_by(store.objects(PODS, key[0]), stateful_set["metadata"]["uid"])
        plan = decide(stateful_set, owned)
        for name in plan.delete:
            if (pod := store.get(PODS, key[0], name)) is not None:
                reconciling.delete(handler, PODS, pod)
        for index in plan.create:
            reconciling.create(handler, PODS, key[0], pod_body(stateful_set, index))
        reconciling.write_status(handler, STATEFUL_SETS, stateful_set, plan.status)
        return None
