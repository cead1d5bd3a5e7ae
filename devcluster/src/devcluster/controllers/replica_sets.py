"""The apps/v1 ReplicaSet controller: keep `spec.replicas` active pods from the template.

Deployments roll out through ReplicaSets, as on a real cluster, so `kubectl get rs` and the
`pod-template-hash` label look familiar. Pods are matched by controller reference (orphans
are not adopted); surplus pods go not-ready first, then newest first, as the real
controller's ranking prefers. `minReadySeconds` is treated as 0: available means ready.

`decide` is pure and table-tested; `ReplicaSetController` applies its plan.
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
REPLICA_SETS = "apps/replicasets"


@dataclass
class ReplicaPlan:
    """Pods to create (a count) and delete (by name), and the status to write."""

    status: JsonObject
    create: int = 0
    delete: list[str] = field(default_factory=list)


def deletion_order(active: list[JsonObject]) -> list[JsonObject]:
    """Return pods in the order a scale-down removes them: not-ready first, newest first."""
    newest_first = sorted(active, key=pods.creation_order, reverse=True)
    return sorted(newest_first, key=lambda p: pods.phase(p) == "Running" and pods.is_ready(p))


def decide(replica_set: JsonObject, owned: list[JsonObject]) -> ReplicaPlan:
    """Return what to create and delete so the ReplicaSet has its replicas."""
    wanted = int(replica_set["spec"].get("replicas", 1))
    active = [p for p in owned if pods.is_active(p)]
    plan = ReplicaPlan(status={})
    if len(active) < wanted:
        plan.create = wanted - len(active)
    elif len(active) > wanted:
        victims = deletion_order(active)[: len(active) - wanted]
        plan.delete = [p["metadata"]["name"] for p in victims]
    ready_count = sum(pods.is_ready(p) for p in active)
    status: JsonObject = {
        "replicas": len(active),
        "fullyLabeledReplicas": len(active),
        "readyReplicas": ready_count,
        "availableReplicas": ready_count,
        "observedGeneration": replica_set["metadata"].get("generation", 1),
    }
    plan.status = {k: v for k, v in status.items() if v or k == "replicas"}
    return plan


class ReplicaSetController:
    """Reconciles ReplicaSets against the pods they control."""

    resources = (REPLICA_SETS, PODS)

    def keys_for(self, handler: Handler, event: Event) -> Iterable[Key]:
        """A ReplicaSet's own events and those of its pods."""
        meta = event.obj["metadata"]
        if event.resource == REPLICA_SETS:
            return [(meta.get("namespace", ""), meta["name"])]
        owner = reconciling.owner_key(event.obj, "ReplicaSet")
        return [owner] if owner else []

    def reconcile(self, handler: Handler, key: Key) -> float | None:
        """Create and delete pods and write status for one ReplicaSet."""
        store = handler.store
        replica_set = store.get(REPLICA_SETS, *key)
        if replica_set is None or replica_set["metadata"].get("deletionTimestamp"):
            return None
        owned = reconciling.owned_by(store.objects(PODS, key[0]), replica_set["metadata"]["uid"])
        plan = decide(replica_set, owned)
        for name in plan.delete:
            if (pod := store.get(PODS, key[0], name)) is not None:
                reconciling.delete(handler, PODS, pod)
        owner = reconciling.controller_ref(
            {**replica_set, "apiVersion": "apps/v1", "kind": "ReplicaSet"}
        )
        template = replica_set["spec"].get("template") or {}
        for _ in range(plan.create):
            body = pods.from_template(template, owner, {}, generateName=f"{key[1]}-")
            reconciling.create(handler, PODS, key[0], body)
        reconciling.write_status(handler, REPLICA_SETS, replica_set, plan.status)
        return None
