"""The apps/v1 Deployment controller: roll a pod template out through ReplicaSets.

Each distinct template gets a ReplicaSet `<deployment>-<pod-template-hash>` carrying the hash
in its labels and selector and a `deployment.kubernetes.io/revision` annotation, so `kubectl
rollout status/history` work. The rollout is deliberately simple: `Recreate` scales the old
ReplicaSets to zero and then the new one up; `RollingUpdate` surges the new ReplicaSet to the
full count and scales the old ones down once it is available (never fewer available pods than
before, at the cost of a brief surge). Status and the Available/Progressing conditions are
those kubectl reads. Not here: paused rollouts, progress deadlines, revision history limits.

`decide` is pure and table-tested; `DeploymentController` applies its plan.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from devcluster.controllers import conditions, pods, reconciling
from devcluster.controllers.reconciling import Key
from devcluster.handler import Handler, WriteOptions
from devcluster.store import Event

JsonObject = dict[str, Any]
DEPLOYMENTS = "apps/deployments"
REPLICA_SETS = "apps/replicasets"
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"


@dataclass
class RolloutPlan:
    """A ReplicaSet to create, replica counts to set by ReplicaSet name, and the status."""

    status: JsonObject
    create: JsonObject | None = None
    scale: dict[str, int] = field(default_factory=dict)


def _revision(replica_set: JsonObject) -> int:
    annotations = replica_set["metadata"].get("annotations") or {}
    return int(annotations.get(REVISION) or 0)


def new_replica_set(deployment: JsonObject, template_hash: str, revision: int) -> JsonObject:
    """Return the ReplicaSet body for the Deployment's current template (with 0 replicas)."""
    spec = deployment["spec"]
    template = copy.deepcopy(spec.get("template") or {})
    labels = {**(template.get("metadata") or {}).get("labels", {}), HASH_LABEL: template_hash}
    template.setdefault("metadata", {})["labels"] = labels
    selector = copy.deepcopy(spec.get("selector") or {})
    selector["matchLabels"] = {**selector.get("matchLabels", {}), HASH_LABEL: template_hash}
    name = deployment["metadata"]["name"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{name}-{template_hash}",
            "labels": labels,
            "annotations": {REVISION: str(revision), DESIRED: str(spec.get("replicas", 1))},
            "ownerReferences": [reconciling.controller_ref(deployment)],
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": spec.get("minReadySeconds", 0),
            "selector": selector,
            "template": template,
        },
    }


def _count(replica_sets: Iterable[JsonObject], field_name: str) -> int:
    return sum(int((rs.get("status") or {}).get(field_name) or 0) for rs in replica_sets)


def _scale(deployment: JsonObject, new: JsonObject | None, old: list[JsonObject]) -> dict[str, int]:
    wanted = int(deployment["spec"].get("replicas", 1))
    recreate = (deployment["spec"].get("strategy") or {}).get("type") == "Recreate"
    new_available = _count([new], "availableReplicas") if new is not None else 0
    old_running = _count(old, "replicas") + sum(int(rs["spec"].get("replicas", 0)) for rs in old)
    scale: dict[str, int] = {}
    if new is not None and (not recreate or old_running == 0):
        scale[new["metadata"]["name"]] = wanted
    if recreate or new_available >= wanted:
        scale.update({rs["metadata"]["name"]: 0 for rs in old})
    return scale


def decide(deployment: JsonObject, owned: list[JsonObject], now: datetime) -> RolloutPlan:
    """Return the ReplicaSet changes and status for one Deployment."""
    spec = deployment["spec"]
    collisions = int((deployment.get("status") or {}).get("collisionCount") or 0)
    template_hash = pods.template_hash(spec.get("template") or {}, collisions)
    current = [rs for rs in owned if not rs["metadata"].get("deletionTimestamp")]
    new = next((rs for rs in current if _labels(rs).get(HASH_LABEL) == template_hash), None)
    old = [rs for rs in current if rs is not new]
    plan = RolloutPlan(status={})
    if new is None:
        revision = max((_revision(rs) for rs in current), default=0) + 1
        plan.create = new_replica_set(deployment, template_hash, revision)
    unchanged = {(rs["metadata"]["name"], rs["spec"].get("replicas")) for rs in current}
    plan.scale = {n: c for n, c in _scale(deployment, new, old).items() if (n, c) not in unchanged}
    plan.status = rollout_status(deployment, new, old, now)
    return plan


def _labels(obj: JsonObject) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


def rollout_status(
    deployment: JsonObject, new: JsonObject | None, old: list[JsonObject], now: datetime
) -> JsonObject:
    """Return the Deployment status kubectl reads, from its ReplicaSets' statuses."""
    wanted = int(deployment["spec"].get("replicas", 1))
    every = [*old, *([new] if new is not None else [])]
    available = _count(every, "availableReplicas")
    updated = _count([new], "replicas") if new is not None else 0
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    new_name = new["metadata"]["name"] if new is not None else deployment["metadata"]["name"]
    done = updated == wanted and _count(every, "replicas") == wanted and available >= wanted
    progressing = conditions.condition(
        "Progressing",
        True,
        "NewReplicaSetAvailable" if done else "ReplicaSetUpdated",
        f'ReplicaSet "{new_name}" '
        + ("has successfully progressed." if done else "is progressing."),
        stamp,
    )
    minimum = available >= wanted - _max_unavailable(deployment, wanted)
    availability = conditions.condition(
        "Available",
        minimum,
        "MinimumReplicasAvailable" if minimum else "MinimumReplicasUnavailable",
        "Deployment has minimum availability."
        if minimum
        else "Deployment does not have minimum availability.",
        stamp,
    )
    status: JsonObject = {
        "observedGeneration": deployment["metadata"].get("generation", 1),
        "replicas": _count(every, "replicas"),
        "updatedReplicas": updated,
        "readyReplicas": _count(every, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(0, wanted - available),
    }
    status = {k: v for k, v in status.items() if v or k == "observedGeneration"}
    old_conditions = (deployment.get("status") or {}).get("conditions") or []
    status["conditions"] = conditions.merged(old_conditions, [availability, progressing])
    return status


def _max_unavailable(deployment: JsonObject, wanted: int) -> int:
    strategy = deployment["spec"].get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0
    value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", "25%")
    if isinstance(value, str) and value.endswith("%"):
        return wanted * int(value[:-1]) // 100
    return int(value)


class DeploymentController:
    """Reconciles Deployments against the ReplicaSets they control."""

    resources = (DEPLOYMENTS, REPLICA_SETS)

    def keys_for(self, handler: Handler, event: Event) -> Iterable[Key]:
        """A Deployment's own events and those of its ReplicaSets."""
        meta = event.obj["metadata"]
        if event.resource == DEPLOYMENTS:
            return [(meta.get("namespace", ""), meta["name"])]
        owner = reconciling.owner_key(event.obj, "Deployment")
        return [owner] if owner else []

    def reconcile(self, handler: Handler, key: Key) -> float | None:
        """Create and scale ReplicaSets and write status for one Deployment."""
        store = handler.store
        stored = store.get(DEPLOYMENTS, *key)
        if stored is None or stored["metadata"].get("deletionTimestamp"):
            return None
        deployment = {**stored, "apiVersion": "apps/v1", "kind": "Deployment"}
        owned = reconciling.owned_by(
            store.objects(REPLICA_SETS, key[0]), deployment["metadata"]["uid"]
        )
        plan = decide(deployment, owned, datetime.now(UTC))
        if plan.create is not None:
            reconciling.create(handler, REPLICA_SETS, key[0], plan.create)
            return 0.0  # scale it on the next pass, from the stored object
        kind = reconciling.kind(handler, REPLICA_SETS)
        for name, replicas in plan.scale.items():
            replica_set = store.get(REPLICA_SETS, key[0], name)
            if replica_set is None:
                continue
            body = copy.deepcopy(replica_set)
            body["spec"]["replicas"] = replicas
            body["metadata"].setdefault("annotations", {})[DESIRED] = str(
                deployment["spec"].get("replicas", 1)
            )
            handler.update(kind, key[0], name, "", body, WriteOptions())
        reconciling.write_status(handler, DEPLOYMENTS, stored, plan.status)
        return None
