"""Every difference from KubeRay's operator the differential suite accepts, each with its reason.

A difference is accepted only when its path matches a pattern here (`*` matches anything, every
other character itself), and each entry
says why: `NEWER` when our operator follows KubeRay v1.7, the version this project implements,
and the operator built (`KUBERAY_VERSION`) is older; `CHOSEN` when we differ on purpose. The
README's "Differences from KubeRay" lists every `CHOSEN` reason (a test holds it to this file).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from devcluster.control_plane.building import KUBERAY_VERSION
from tests.differential.normalise import Difference

NEWER = "newer"
CHOSEN = "chosen"


@dataclass(frozen=True)
class Known:
    """Differences whose path matches `pattern`, and why they are accepted."""

    pattern: str
    kind: str
    reason: str
    when: Callable[[Difference], bool] | None = None
    """Accept only differences this says yes to (the part that is newer, nothing else)."""

    def explains(self, difference: Difference) -> bool:
        parts = (re.escape(part) for part in self.pattern.split("*"))
        if re.fullmatch(".*".join(parts), difference.path) is None:
            return False
        return self.when is None or self.when(difference)


def ours_as(pattern: str, theirs: str = "", anywhere: bool = False) -> Callable[[Difference], bool]:
    """Accept a string of ours that is KubeRay's once its first match of `pattern` (at the
    start, or `anywhere`) is written as `theirs`: the newer part differs, nothing else."""
    anchored = "" if anywhere else "^"

    def same(difference: Difference) -> bool:
        if not isinstance(difference.ours, str) or not isinstance(difference.kuberay, str):
            return False
        written = re.sub(f"{anchored}(?:{pattern})", lambda _: theirs, difference.ours, count=1)
        return written == difference.kuberay

    return same


_POD = "/Pod/*"
_FULL_POD_NAMES = (
    "Pods are created under a full name of KubeRay's shape (`<cluster>-head-<5 random>`) "
    "drawn in the workflow, not with `generateName`: a create retried after a lost answer "
    "then finds its own pod instead of adding a second one"
)
_GCS_WAIT = r"until .*? ; do echo .*? ; sleep 2 ; done ; "


def in_ray_pods(
    suffix: str, kind: str, reason: str, when: Callable[[Difference], bool] | None = None
) -> tuple[Known, Known]:
    """The same acceptance for Ray pods and for Jobs whose template is a Ray pod's (the Redis
    cleanup Job is the head pod's clone, annotations and env included)."""
    pod, job = f"{_POD}{suffix}", f"/Job/*{suffix}"
    return Known(pod, kind, reason, when), Known(job, kind, reason, when)


def absent_on(side: str) -> Callable[[Difference], bool]:
    """Accept only a value one side lacks: `side` ("kuberay" or "ours") has nothing there."""
    return lambda d: getattr(d, side) is None


def _gcs_check_aside(script: object) -> object:
    """A submitter script with the command of its GCS wait loop left out."""
    if not isinstance(script, str):
        return script
    return re.sub(r"^until .*? >/dev/null 2>&1 ; do ", "until CHECK ; do ", script, count=1)


_AS_APPLIED = (
    "A RayJob's or RayService's spec stays as applied: KubeRay adds its finalizer by writing "
    "the whole object back through its Go types, which drops empty fields (InteractiveMode's "
    "`jobId: \"\"`) or adds them (a RayService's `scaleStrategy: {}`, a template's "
    "`metadata: {}`: a new generation, so its `observedGeneration` then runs one ahead of ours "
    "for the same edits); ours patches the finalizer alone"
)


def _one_generation_on(difference: Difference) -> bool:
    ours, theirs = difference.ours, difference.kuberay
    return isinstance(ours, int) and isinstance(theirs, int) and theirs == ours + 1


def _not_by_name(difference: Difference) -> bool:
    theirs = difference.kuberay
    return isinstance(theirs, list) and theirs != sorted(theirs)


KNOWN = (
    *in_ray_pods(
        "/metadata/annotations/ray.io/kuberay-version",
        NEWER,
        "v1.6 stamps the operator's version on each head pod",
    ),
    *in_ray_pods(
        "/metadata/annotations/ray.io/upgrade-strategy-recreate-hash",
        CHOSEN,
        "Each head pod carries a digest of its cluster's spec under KubeRay's "
        "`ray.io/upgrade-strategy-recreate-hash`, computed from our model's JSON, not Go's, so "
        "the value differs; it changes exactly when KubeRay's does, so a Recreate upgrade "
        "starts on the same edits",
        lambda d: isinstance(d.ours, str) and isinstance(d.kuberay, str),
    ),
    Known(
        f"{_POD}/spec/containers[*]/args[0]",
        NEWER,
        "v1.7 writes `ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}` before `ray start`",
        ours_as(
            re.escape("ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}"),
            "ulimit -n 65536",
            anywhere=True,  # after the user's own command, when there is one
        ),
    ),
    Known(
        "/*/spec/containers[ray-job-submitter]/args[0]",
        NEWER,
        "v1.7's K8sJobMode submitter waits until the dashboard reports the GCS healthy before "
        "`ray job status` (v1.5.0 waits so in SidecarMode only)",
        ours_as(_GCS_WAIT),
    ),
    Known(
        "/*/spec/containers[ray-job-submitter]/args[0]",
        NEWER,
        "v1.7's submitter waits for the GCS with Python's urllib (v1.5.0: wget, which not every "
        "Ray image has)",
        lambda d: _gcs_check_aside(d.ours) == _gcs_check_aside(d.kuberay),
    ),
    Known(
        "/RayCluster/*/metadata/annotations/ray.io/disable-provisioned-head-restart",
        NEWER,
        "v1.6 annotates a SidecarMode RayJob's cluster so that a provisioned head is not "
        "recreated (the job would run again)",
        absent_on("kuberay"),
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
        "/RayCluster/*/metadata/labels/ray.io/job-submission-mode",
        NEWER,
        "v1.7 labels a RayJob's cluster with the job's submission mode",
    ),
    *in_ray_pods(
        "/spec/containers[*]/env[RAY_CLUSTER_NAMESPACE]*",
        NEWER,
        "v1.7 gives every Ray container RAY_CLUSTER_NAMESPACE",
    ),
    *in_ray_pods(
        "/spec/containers[*]/env[RAY_USAGE_STATS_EXTRA_TAGS]/value",
        NEWER,
        "the usage-stats tag carries the operator's version (kuberay_version=v1.7.0)",
    ),
    Known(
        "/Job/*/spec/template/metadata/labels/ray.io/originated-from-*",
        NEWER,
        "v1.6 labels the submitter's pods with the RayJob they come from",
    ),
    Known(
        "/Job/*/spec/template/metadata/labels/app.kubernetes.io/created-by",
        NEWER,
        "v1.6 labels the submitter's pods as created by the operator",
    ),
    Known(
        f"{_POD}/metadata/labels/ray.io/originated-from-*",
        NEWER,
        "the submitter's pods carry the labels of its template (above)",
    ),
    Known(
        f"{_POD}/metadata/labels/app.kubernetes.io/created-by",
        NEWER,
        "the submitter's pods carry the labels of its template (above)",
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
        "/events/*/Warning/FailedToCreateRayCluster",
        CHOSEN,
        "A RayJob's or RayService's cluster is created once, under the name its workflow "
        "drew; KubeRay v1.5.0 can miss the cluster it had just created in a stale cache and "
        "record `FailedToCreateRayCluster` for it",
        absent_on("ours"),
    ),
    Known(
        "/events/RayJob/Warning/FailedToDeleteRayJobSubmitter",
        CHOSEN,
        "A suspended or retried RayJob's submitter Job is deleted once; KubeRay v1.5.0 can find "
        'it again in a stale cache and record `FailedToDeleteRayJobSubmitter` ("not found") '
        "for the Job it had already deleted",
        absent_on("ours"),
    ),
    Known(
        "/events/RayJob/Warning/FailedToDeleteRayCluster",
        CHOSEN,
        "A suspended RayJob's cluster is deleted once; KubeRay v1.5.0 can find it again in a "
        "stale cache, without its deletion time, delete it a second time and record "
        '`FailedToDeleteRayCluster` ("not found") for the cluster it had already deleted',
        absent_on("ours"),
    ),
    Known("/RayJob/*/spec/*", CHOSEN, _AS_APPLIED, lambda d: d.kuberay is None and d.ours == ""),
    *(
        Known(f"/RayService/*/status/{path}", CHOSEN, _AS_APPLIED, _one_generation_on)
        for path in ("observedGeneration", "conditions[*]/observedGeneration")
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
        "/RayCluster/*/metadata/annotations/ray.io/kuberay-version",
        NEWER,
        "a RayService's cluster is stamped with the version of the operator that made it",
        lambda d: (d.kuberay, d.ours) == (KUBERAY_VERSION, "v1.7.0"),
    ),
    Known(
        "/RayService/*/metadata/finalizers",
        NEWER,
        "v1.7 puts `ray.io/rayservice-finalizer` on a RayService, to delete its clusters at once",
        lambda d: d.kuberay is None and d.ours == ["ray.io/rayservice-finalizer"],
    ),
    Known(
        "/RayCluster/*/metadata/annotations/ray.io/hash-without-replicas-and-workers-to-delete",
        CHOSEN,
        "A RayService's cluster carries a digest of its spec under KubeRay's annotation, but "
        "computed from our model's JSON, not Go's, so the value differs; it changes exactly "
        "when KubeRay's does, so upgrades start on the same edits",
    ),
    Known(
        "/PodGroup/*/metadata/annotations*",
        NEWER,
        "v1.7 copies the CR's annotations to its Volcano PodGroup",
        absent_on("kuberay"),
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
        f"{_POD}/spec/containers[autoscaler]/env[KUBERAY_GEN_AUTOSCALER_START_CMD]*",
        NEWER,
        "v1.7 hands the autoscaler its generated command as KUBERAY_GEN_AUTOSCALER_START_CMD",
    ),
    Known(
        f"{_POD}/spec/containers[autoscaler]/command[*]",
        NEWER,
        "v1.7 takes the autoscaler's command and args from `autoscalerOptions`",
    ),
    Known(
        f"{_POD}/spec/containers[autoscaler]/args[*]",
        NEWER,
        "v1.7 takes the autoscaler's command and args from `autoscalerOptions`",
    ),
    *(
        # `*ontainers`: containers and initContainers alike.
        Known(f"{_POD}/spec/*ontainers[*]/env[{name}]*", NEWER, "v1.6 token auth (`authOptions`)")
        for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
    ),
    *(
        Known(
            f"{_POD}/spec/{where}",
            NEWER,
            "v1.7 Kubernetes token auth (`authOptions.enableK8sTokenAuth`): the flag and the "
            "projected ServiceAccount token",
            absent_on("kuberay"),
        )
        for where in (
            "*ontainers[*]/env[RAY_ENABLE_K8S_TOKEN_AUTH]*",
            "*ontainers[*]/volumeMounts[ray-token]*",
            "volumes[ray-token]*",
        )
    ),
    Known(
        "/NetworkPolicy/*",
        NEWER,
        "v1.7 (alpha) creates the NetworkPolicies `networkIsolation` asks for",
        absent_on("kuberay"),
    ),
    Known(
        "/events/RayCluster/Normal/CreatedNetworkPolicy",
        NEWER,
        "v1.7 (alpha) creates the NetworkPolicies `networkIsolation` asks for",
        absent_on("kuberay"),
    ),
    Known(
        "/RayCluster/*/status/conditions[ReplicaFailure]/message",
        CHOSEN,
        _FULL_POD_NAMES,
        lambda d: isinstance(d.ours, str) and d.ours.replace('-?????"', '-"') == d.kuberay,
    ),
    *(
        known
        for probe in ("livenessProbe", "readinessProbe")
        for known in (
            Known(
                f"{_POD}/spec/containers[*]/{probe}/exec/command",
                NEWER,
                "v1.6 probes Ray 2.53 and later with one HTTP GET of :52365/api/healthz",
                absent_on("ours"),
            ),
            Known(
                f"{_POD}/spec/containers[*]/{probe}/httpGet/*",
                NEWER,
                "v1.6 probes Ray 2.53 and later with one HTTP GET of :52365/api/healthz",
                absent_on("kuberay"),
            ),
        )
    ),
    Known(
        "/Ray*/*/conditions[HeadPodReady]/reason",
        NEWER,
        "v1.7 gives HeadPodReady the first unready container's reason (v1.5.0: PodReady's)",
        lambda d: d.kuberay == "ContainersNotReady",
    ),
    Known(
        "/Ray*/*/conditions[HeadPodReady]/message",
        NEWER,
        "v1.7 gives HeadPodReady the first unready container's message",
        lambda d: isinstance(d.ours, str) and d.ours.startswith(d.kuberay or ""),
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


def unexplained(found: Iterable[Difference], also: Iterable[Known] = ()) -> list[Difference]:
    """The differences neither a `KNOWN` entry nor one of `also` (a scenario's own) accepts."""
    accepted = (*KNOWN, *also)
    return [d for d in found if not any(k.explains(d) for k in accepted)]
