"""Every difference from KubeRay's operator the differential suite accepts, each with its reason.

A difference is accepted only when its path matches a pattern here (`*` matches anything, every
other character itself), and each entry says why: `CHOSEN`, a difference from KubeRay v1.7.0
(the operator built) on purpose. The README's "Differences from KubeRay" lists every reason (a
test holds it to this file).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tests.differential.normalise import Difference

CHOSEN = "chosen"


@dataclass(frozen=True)
class Known:
    """Differences whose path matches `pattern`, and why they are accepted."""

    pattern: str
    kind: str
    reason: str
    when: Callable[[Difference], bool] | None = None
    """Accept only differences this says yes to (the part that differs, nothing else)."""

    def explains(self, difference: Difference) -> bool:
        parts = (re.escape(part) for part in self.pattern.split("*"))
        if re.fullmatch(".*".join(parts), difference.path) is None:
            return False
        return self.when is None or self.when(difference)


_POD = "/Pod/*"
_FULL_POD_NAMES = (
    "Pods are created under a full name of KubeRay's shape (`<cluster>-head-<5 random>`) "
    "drawn in the workflow, not with `generateName`: a create retried after a lost answer "
    "then finds its own pod instead of adding a second one"
)


def absent_on(side: str) -> Callable[[Difference], bool]:
    """Accept only a value one side lacks: `side` ("kuberay" or "ours") has nothing there."""
    return lambda d: getattr(d, side) is None


_AS_APPLIED = (
    "A RayJob's, RayService's or Redis fault-tolerant RayCluster's spec stays as applied: "
    "KubeRay adds its finalizer by writing the whole object back through its Go types, which "
    "drops empty fields (InteractiveMode's `jobId: \"\"`) or adds them (a RayService's "
    "`scaleStrategy: {}`, a template's `metadata: {}`): a new generation, so its "
    "`metadata.generation` and `observedGeneration` then run one ahead of ours for the same "
    "edits; ours patches the finalizer alone"
)


def _one_generation_on(difference: Difference) -> bool:
    ours, theirs = difference.ours, difference.kuberay
    return isinstance(ours, int) and isinstance(theirs, int) and theirs == ours + 1


def _not_by_name(difference: Difference) -> bool:
    theirs = difference.kuberay
    return isinstance(theirs, list) and theirs != sorted(theirs)


KNOWN = (
    Known(
        f"{_POD}/metadata/annotations/ray.io/upgrade-strategy-recreate-hash",
        CHOSEN,
        "Each head pod carries a digest of its cluster's spec under KubeRay's "
        "`ray.io/upgrade-strategy-recreate-hash`, computed from our model's JSON, not Go's, so "
        "the value differs; it changes exactly when KubeRay's does, so a Recreate upgrade "
        "starts on the same edits",
        lambda d: isinstance(d.ours, str) and isinstance(d.kuberay, str),
    ),
    Known(
        "/RayJob/*/status/observedGeneration",
        CHOSEN,
        "A RayJob's `status.observedGeneration` is written, the generation its status was "
        "computed for, as for the other kinds (tools that wait for a status to be current read "
        "it); KubeRay declares the field but never writes it",
        absent_on("kuberay"),
    ),
    Known(
        "*/labels/ray.io/rayjob-attempt",
        CHOSEN,
        "Each attempt's RayCluster and submitter Job carry `ray.io/rayjob-attempt` (1, 2, …), so "
        "`kubectl get -l` tells a retry's objects from the last attempt's",
    ),
    Known(
        "/RayCluster/*/metadata/annotations/kubectl.kubernetes.io/last-applied-configuration",
        CHOSEN,
        "A RayJob's cluster gets the RayJob's annotations but kubectl's "
        "`last-applied-configuration`: that records the RayJob's manifest, not the cluster's, "
        "and `kubectl apply` would read it as the cluster's own",
    ),
    Known(
        "/PodGroup/*/metadata/annotations/kubectl.kubernetes.io/last-applied-configuration",
        CHOSEN,
        "A Volcano PodGroup likewise gets its CR's annotations but that one (KubeRay v1.7 "
        "copies it too)",
        absent_on("ours"),
    ),
    Known(
        "/events/*/Warning/FailedToCreateRayCluster",
        CHOSEN,
        "A RayJob's or RayService's cluster is created once, under the name its workflow "
        "drew; KubeRay can miss the cluster it had just created in a stale cache and "
        "record `FailedToCreateRayCluster` for it",
        absent_on("ours"),
    ),
    Known(
        "/events/RayJob/Warning/FailedToDeleteRayJobSubmitter",
        CHOSEN,
        "A suspended or retried RayJob's submitter Job is deleted once; KubeRay can find "
        'it again in a stale cache and record `FailedToDeleteRayJobSubmitter` ("not found") '
        "for the Job it had already deleted",
        absent_on("ours"),
    ),
    Known(
        "/events/RayJob/Warning/FailedToDeleteRayCluster",
        CHOSEN,
        "A suspended RayJob's cluster is deleted once; KubeRay can find it again in a "
        "stale cache, without its deletion time, delete it a second time and record "
        '`FailedToDeleteRayCluster` ("not found") for the cluster it had already deleted',
        absent_on("ours"),
    ),
    Known("/RayJob/*/spec/*", CHOSEN, _AS_APPLIED, lambda d: d.kuberay is None and d.ours == ""),
    *(
        Known(f"/RayService/*/{path}", CHOSEN, _AS_APPLIED, _one_generation_on)
        for path in (
            "metadata/generation",
            "status/observedGeneration",
            "status/conditions[*]/observedGeneration",
        )
    ),
    *(
        Known(f"/{kind}/*/metadata/generation", CHOSEN, _AS_APPLIED, _one_generation_on)
        for kind in ("RayJob", "RayCluster")
    ),
    Known(
        "/RayService/*ServiceStatus/rayClusterStatus/*",
        CHOSEN,
        "A RayService's copies of its clusters' statuses are kept current; KubeRay writes them "
        "only when another part of the RayService's status changes, so a cluster that never gets "
        "ready shows its first moments there (no resources, no conditions) for as long as it lasts",
        lambda d: d.kuberay in (None, "0"),
    ),
    Known(
        "/RayCluster/*/status/observedGeneration",
        CHOSEN,
        "`status.observedGeneration` is the generation the last status was computed for; "
        "KubeRay leaves it stale when nothing else in the status changed (its own TODO says "
        "the field is not well maintained)",
    ),
    Known(
        "/RayCluster/*/metadata/annotations/ray.io/hash-without-replicas-and-workers-to-delete",
        CHOSEN,
        "A RayService's cluster carries a digest of its spec under KubeRay's annotation, but "
        "computed from our model's JSON, not Go's, so the value differs; it changes exactly "
        "when KubeRay's does, so upgrades start on the same edits",
    ),
    Known(
        "/events/RayService/Normal/PromotedRayCluster",
        CHOSEN,
        "A blue-green switch records `PromotedRayCluster` on the RayService (KubeRay records no "
        "Event for it), so `kubectl describe` shows when traffic moved",
        absent_on("kuberay"),
    ),
    Known(
        f"{_POD}/metadata/generateName",
        CHOSEN,
        _FULL_POD_NAMES,
    ),
    Known(
        "/RayCluster/*/status/conditions[ReplicaFailure]/message",
        CHOSEN,
        _FULL_POD_NAMES,
        lambda d: isinstance(d.ours, str) and d.ours.replace('-?????"', '-"') == d.kuberay,
    ),
    Known(
        "/Service/*/spec/ports(order)",
        CHOSEN,
        "A custom head Service (`headService`) lists the user's ports, then the default ones by "
        "name; KubeRay appends the default ones in Go's map order, which changes from one "
        "reconcile to the next",
        _not_by_name,
    ),
)


BY_SAMPLE: dict[str, tuple[Known, ...]] = {
    "ray-job.interactive-mode.yaml": (
        Known(
            "/RayJob/*/status/rayClusterStatus/*",
            CHOSEN,
            "While an InteractiveMode RayJob waits for its job id (`Waiting`), its copy of its "
            "cluster's status is the last not-ready one its operator read, kept until the id "
            "comes; which moment that is depends on when each operator looked (KubeRay at each "
            "reconcile, ours at the cluster's news folded over 2 s)",
        ),
    ),
}
"""Differences accepted for one sample only: a RayJob reaches `Waiting` in interactive mode
alone, and elsewhere the same paths must match."""


def unexplained(found: Iterable[Difference], also: Iterable[Known] = ()) -> list[Difference]:
    """The differences neither a `KNOWN` entry nor one of `also` (a scenario's own) accepts."""
    accepted = (*KNOWN, *also)
    return [d for d in found if not any(k.explains(d) for k in accepted)]
