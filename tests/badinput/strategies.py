"""Hypothesis strategies: ray.io objects KubeRay accepts, and the ways users break them.

`valid_objects(kind)` draws either one of KubeRay's samples or a generated object within the
rules. `broken_objects(kinds)` takes such an object and applies one mutation from
`MUTATIONS`, each modelled on a mistake a user makes (a dropped required field, a wrong type,
a number out of range, an unknown enum value, a name that is too long, two fields that
exclude each other); every mutation returns the field path a rejection has to name.
`json_values` and `fuzzed_objects` feed the "never raises" properties with arbitrary shapes.
"""

from __future__ import annotations

import copy
import itertools
import string
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from hypothesis import strategies as st

from crds.constants import ANNOTATION_CATCHUP_WINDOW
from crds.enums import (
    AutoscalerVersion,
    DeletionPolicyType,
    JobSubmissionMode,
    NetworkPolicyMode,
    RayClusterUpgradeType,
    RayServiceUpgradeType,
    UpscalingMode,
)
from crds.violations import join_path
from tests.badinput.objects import CLUSTER_SPEC, JOB_SPEC, JSON, KINDS, kuberay_samples

PathT = tuple[str | int, ...]
Draw = st.DrawFn

# --- paths in JSON documents ------------------------------------------------------------------


def get_in(doc: Any, path: PathT) -> Any:
    """The value at `path`, or None when any step is missing or of the wrong shape."""
    for part in path:
        if isinstance(part, int):
            if not isinstance(doc, list) or part >= len(doc):
                return None
        elif not isinstance(doc, dict):
            return None
        doc = doc[part] if isinstance(part, int) else doc.get(part)
    return doc


def set_in(doc: JSON, path: PathT, value: Any) -> None:
    """Set the value at `path`, creating missing (or non-object) parents as objects."""
    node: Any = doc
    for part, following in itertools.pairwise(path):
        child = node[part] if isinstance(part, int) else node.get(part)
        if not isinstance(child, (dict, list)):
            child = [] if isinstance(following, int) else {}
            node[part] = child
        node = child
    node[path[-1]] = value


def del_in(doc: JSON, path: PathT) -> None:
    """Delete the value at `path` (it must exist)."""
    parent = get_in(doc, path[:-1])
    del parent[path[-1]]


def render(path: PathT) -> str:
    """A path the way violations and API-server causes print it."""
    return join_path(*path)


def cluster_path(doc: JSON) -> PathT | None:
    """Where the object keeps its RayClusterSpec, when it has one."""
    path = CLUSTER_SPEC[doc["kind"]]
    return path if isinstance(get_in(doc, path), dict) else None


def job_path(doc: JSON) -> PathT | None:
    """Where the object keeps a RayJob spec: a RayJob's own, a RayCronJob's template."""
    path = JOB_SPEC.get(doc["kind"])
    return path if path is not None and isinstance(get_in(doc, path), dict) else None


def group_paths(doc: JSON) -> list[PathT]:
    """The worker groups of the object's RayClusterSpec."""
    base = cluster_path(doc)
    groups = get_in(doc, (*base, "workerGroupSpecs")) if base else None
    if base is None or not isinstance(groups, list):
        return []
    return [(*base, "workerGroupSpecs", i) for i, g in enumerate(groups) if isinstance(g, dict)]


def node_group_paths(doc: JSON) -> list[PathT]:
    """The head group and the worker groups: everything with rayStartParams and a template."""
    base = cluster_path(doc)
    head = [(*base, "headGroupSpec")] if base else []
    return head + group_paths(doc)


# --- valid objects ----------------------------------------------------------------------------

NAMES = st.from_regex(r"[a-z][a-z0-9]{0,12}(-[a-z0-9]{1,8})?", fullmatch=True)
GROUP_NAMES = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
IMAGES = st.sampled_from(["rayproject/ray:2.46.0", "rayproject/ray:2.52.1"])
SERVE_CONFIG = "applications:\n  - name: app\n    import_path: fruit.deployment_graph\n"


@st.composite
def pod_template(draw: Draw, container: str) -> JSON:
    """A pod template with one Ray container."""
    ray: JSON = {"name": container, "image": draw(IMAGES)}
    if draw(st.booleans()):
        cpu = draw(st.sampled_from(["1", "500m", "2"]))
        ray["resources"] = {"limits": {"cpu": cpu, "memory": "2Gi"}}
    return {"spec": {"containers": [ray]}}


@st.composite
def worker_group(draw: Draw, name: str) -> JSON:
    """A worker group with consistent replica bounds."""
    low = draw(st.integers(0, 3))
    high = draw(st.integers(low, 6))
    group: JSON = {
        "groupName": name,
        "minReplicas": low,
        "maxReplicas": high,
        "rayStartParams": {},
        "template": draw(pod_template("ray-worker")),
    }
    if draw(st.booleans()):
        group["replicas"] = draw(st.integers(low, high))
    if draw(st.booleans()):
        group["numOfHosts"] = draw(st.integers(1, 2))
    return group


@st.composite
def cluster_spec(draw: Draw) -> JSON:
    """A RayClusterSpec within every rule."""
    names = draw(st.lists(GROUP_NAMES, max_size=3, unique=True))
    spec: JSON = {
        "headGroupSpec": {"rayStartParams": {}, "template": draw(pod_template("ray-head"))},
        "workerGroupSpecs": [draw(worker_group(name)) for name in names],
    }
    if draw(st.booleans()):
        spec["rayVersion"] = "2.46.0"
    if draw(st.booleans()):
        spec["enableInTreeAutoscaling"] = True
    return spec


@st.composite
def rayjob_spec(draw: Draw) -> JSON:
    """A RayJob spec within every rule."""
    spec: JSON = {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": draw(cluster_spec())}
    mode = draw(st.sampled_from([None, *JobSubmissionMode]))
    if mode is not None:
        spec["submissionMode"] = mode.value
    shutdown = draw(st.booleans())
    spec["shutdownAfterJobFinishes"] = shutdown
    if shutdown and draw(st.booleans()):
        spec["ttlSecondsAfterFinished"] = draw(st.integers(0, 600))
    if mode != JobSubmissionMode.INTERACTIVE and draw(st.booleans()):
        spec["backoffLimit"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        spec["activeDeadlineSeconds"] = draw(st.integers(1, 3600))
    if draw(st.booleans()):
        spec["runtimeEnvYAML"] = "pip:\n  - requests\nenv_vars:\n  A: b\n"
    return spec


@st.composite
def rayservice_spec(draw: Draw) -> JSON:
    """A RayService spec within every rule."""
    spec: JSON = {"serveConfigV2": SERVE_CONFIG, "rayClusterConfig": draw(cluster_spec())}
    kind = draw(
        st.sampled_from([None, RayServiceUpgradeType.NEW_CLUSTER, RayServiceUpgradeType.NONE])
    )
    if kind is not None:
        spec["upgradeStrategy"] = {"type": kind.value}
    if draw(st.booleans()):
        spec["rayClusterDeletionDelaySeconds"] = draw(st.integers(0, 600))
    return spec


@st.composite
def raycronjob_spec(draw: Draw) -> JSON:
    """A RayCronJob spec within every rule: a schedule, maybe a zone, a RayJob template."""
    schedules = ["*/5 * * * *", "@hourly", "0 3 * * 1-5", "@every 1h30m", "30 2 1 * *"]
    spec: JSON = {"schedule": draw(st.sampled_from(schedules)), "jobTemplate": draw(rayjob_spec())}
    zone = draw(st.sampled_from([None, "UTC", "Europe/Paris", "America/New_York"]))
    if zone is not None:
        spec["timeZone"] = zone
    if draw(st.booleans()):
        spec["suspend"] = draw(st.booleans())
    return spec


_SPECS: dict[str, Callable[[], st.SearchStrategy[JSON]]] = {
    "RayCluster": cluster_spec,
    "RayJob": rayjob_spec,
    "RayService": rayservice_spec,
    "RayCronJob": raycronjob_spec,
}


@st.composite
def generated_object(draw: Draw, kind: str) -> JSON:
    """A generated object of `kind` that both gates accept."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "metadata": {"name": draw(NAMES)},
        "spec": draw(_SPECS[kind]()),
    }


def valid_objects(kind: str) -> st.SearchStrategy[JSON]:
    """One of KubeRay's samples of `kind`, or a generated object (a fresh copy either way)."""
    samples = st.sampled_from(kuberay_samples()[kind]).map(copy.deepcopy)
    return st.one_of(samples, generated_object(kind))


# --- mutations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """One way to break an object: where it applies and what it does."""

    name: str
    applies: Callable[[JSON], bool]
    apply: Callable[[Draw, JSON], PathT]
    """Edits the object in place; returns the path a rejection must name."""


@dataclass
class Broken:
    """An object made invalid by one mutation."""

    doc: JSON
    expected: str
    mutation: str


def _always(doc: JSON) -> bool:
    return True


def _kind(*kinds: str) -> Callable[[JSON], bool]:
    return lambda doc: doc["kind"] in kinds


def _has_cluster(doc: JSON) -> bool:
    return cluster_path(doc) is not None


def _has_job(doc: JSON) -> bool:
    return job_path(doc) is not None


def _has_groups(doc: JSON) -> bool:
    return bool(group_paths(doc))


def _has_cluster_of(*kinds: str) -> Callable[[JSON], bool]:
    return lambda doc: doc["kind"] in kinds and _has_cluster(doc)


def _drop_required(draw: Draw, doc: JSON) -> PathT:
    candidates: list[PathT] = [("spec",)]
    if not get_in(doc, ("metadata", "generateName")):
        candidates.append(("metadata", "name"))
    base = cluster_path(doc)
    if base is not None:
        candidates += [(*base, "headGroupSpec"), (*base, "headGroupSpec", "template")]
    for group in group_paths(doc):
        candidates += [(*group, "groupName"), (*group, "template")]
    job = job_path(doc)
    if job is not None and base is not None and not get_in(doc, (*job, "clusterSelector")):
        candidates.append(base)
    if doc["kind"] == "RayCronJob":
        candidates += [("spec", "schedule"), ("spec", "jobTemplate")]
    if doc["kind"] == "RayService":
        candidates.append(("spec", "rayClusterConfig"))
    path = draw(st.sampled_from([p for p in candidates if get_in(doc, p) is not None]))
    del_in(doc, path)
    return path


_NOT_INTEGRAL = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: not f.is_integer()
)
_WRONG: dict[str, st.SearchStrategy[Any]] = {
    "bool": st.sampled_from(["true", "false", 1, 0, "yes"]),
    "int": st.one_of(
        st.sampled_from(["3", "0", True]), _NOT_INTEGRAL, st.lists(st.integers(), max_size=2)
    ),
    "str": st.one_of(
        st.integers(),
        st.booleans(),
        st.lists(st.text(max_size=3), max_size=2),
        st.dictionaries(
            st.text(string.ascii_lowercase, min_size=1, max_size=4), st.text(max_size=4), max_size=2
        ),
    ),
    "number": st.sampled_from(["1", "0.5", True]),
    "object": st.one_of(st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2)),
    "list": st.one_of(
        st.text(max_size=5), st.dictionaries(st.just("a"), st.integers(), max_size=1)
    ),
}


def _typed_fields(doc: JSON) -> list[tuple[PathT, str]]:
    fields: list[tuple[PathT, str]] = [(("metadata", "labels", "app"), "str")]
    base = cluster_path(doc)
    if base is not None:
        fields += [
            ((*base, "suspend"), "bool"),
            ((*base, "enableInTreeAutoscaling"), "bool"),
            ((*base, "rayVersion"), "str"),
            ((*base, "workerGroupSpecs"), "list"),
            ((*base, "headGroupSpec", "template"), "object"),
            ((*base, "headGroupSpec", "rayStartParams", "object-store-memory"), "str"),
        ]
    for group in group_paths(doc):
        fields += [
            ((*group, "replicas"), "int"),
            ((*group, "minReplicas"), "int"),
            ((*group, "maxReplicas"), "int"),
            ((*group, "numOfHosts"), "int"),
            ((*group, "groupName"), "str"),
        ]
    job = job_path(doc)
    if job is not None:
        fields += [
            ((*job, "entrypoint"), "str"),
            ((*job, "runtimeEnvYAML"), "str"),
            ((*job, "shutdownAfterJobFinishes"), "bool"),
            ((*job, "suspend"), "bool"),
            ((*job, "backoffLimit"), "int"),
            ((*job, "activeDeadlineSeconds"), "int"),
            ((*job, "ttlSecondsAfterFinished"), "int"),
            ((*job, "entrypointNumCpus"), "number"),
        ]
    if doc["kind"] == "RayCronJob":
        fields += [
            (("spec", "schedule"), "str"),
            (("spec", "timeZone"), "str"),
            (("spec", "suspend"), "bool"),
            (("spec", "jobTemplate"), "object"),
        ]
    if doc["kind"] == "RayService":
        fields += [
            (("spec", "serveConfigV2"), "str"),
            (("spec", "rayClusterDeletionDelaySeconds"), "int"),
            (("spec", "excludeHeadPodFromServeSvc"), "bool"),
            (("spec", "upgradeStrategy"), "object"),
        ]
    return fields


def _wrong_type(draw: Draw, doc: JSON) -> PathT:
    path, kind = draw(st.sampled_from(_typed_fields(doc)))
    set_in(doc, path, draw(_WRONG[kind]))
    return path


_NEGATIVE = st.integers(-(2**31), -1)
_NOT_POSITIVE = st.integers(-(2**31), 0)


def _out_of_range(draw: Draw, doc: JSON) -> PathT:
    choices: list[str] = []
    if group_paths(doc):
        choices += ["negative-min", "negative-max", "min-above-max"]
    job = job_path(doc)
    if job is not None:
        choices += ["backoff", "active-deadline", "pre-running-deadline", "ttl"]
    if doc["kind"] == "RayService":
        choices += ["deletion-delay"]
        if _has_cluster(doc):
            choices += ["surge", "step", "interval"]
    choice = draw(st.sampled_from(choices))
    if choice in ("negative-min", "negative-max", "min-above-max"):
        group = draw(st.sampled_from(group_paths(doc)))
        if choice == "min-above-max":
            high = draw(st.integers(0, 5))
            set_in(doc, (*group, "maxReplicas"), high)
            set_in(doc, (*group, "minReplicas"), high + draw(st.integers(1, 5)))
            return (*group, "minReplicas")
        field = "minReplicas" if choice == "negative-min" else "maxReplicas"
        set_in(doc, (*group, field), draw(_NEGATIVE))
        return (*group, field)
    if choice in ("surge", "step", "interval"):
        return _incremental_out_of_range(draw, doc, choice)
    base = job or ("spec",)
    path, values = {
        "backoff": ((*base, "backoffLimit"), _NEGATIVE),
        "active-deadline": ((*base, "activeDeadlineSeconds"), _NOT_POSITIVE),
        "pre-running-deadline": ((*base, "preRunningDeadlineSeconds"), _NOT_POSITIVE),
        "ttl": ((*base, "ttlSecondsAfterFinished"), _NEGATIVE),
        "deletion-delay": (("spec", "rayClusterDeletionDelaySeconds"), _NEGATIVE),
    }[choice]
    set_in(doc, path, draw(values))
    return path


_OPTIONS: PathT = ("spec", "upgradeStrategy", "clusterUpgradeOptions")


def _incremental(doc: JSON) -> JSON:
    """Make a RayService use incremental upgrades with valid options; returns the options."""
    set_in(doc, (*CLUSTER_SPEC["RayService"], "enableInTreeAutoscaling"), True)
    options = {
        "maxSurgePercent": 50,
        "stepSizePercent": 25,
        "intervalSeconds": 30,
        "gatewayClassName": "istio",
    }
    set_in(doc, ("spec", "upgradeStrategy"), {"type": "NewClusterWithIncrementalUpgrade"})
    set_in(doc, _OPTIONS, options)
    return options


def _incremental_out_of_range(draw: Draw, doc: JSON, choice: str) -> PathT:
    options = _incremental(doc)
    if choice == "surge":
        outside = st.one_of(st.integers(101, 2**31 - 1), _NEGATIVE)
        options["maxSurgePercent"] = draw(outside)
        return (*_OPTIONS, "maxSurgePercent")
    if choice == "step":
        options["maxSurgePercent"] = draw(st.integers(0, 99))
        options["stepSizePercent"] = draw(st.integers(options["maxSurgePercent"] + 1, 100))
        return (*_OPTIONS, "stepSizePercent")
    options["intervalSeconds"] = draw(_NOT_POSITIVE)
    return (*_OPTIONS, "intervalSeconds")


def _values(enum: type[Enum]) -> list[str]:
    return [str(member.value) for member in enum]


def _enum_fields(doc: JSON) -> list[tuple[PathT, list[str]]]:
    fields: list[tuple[PathT, list[str]]] = []
    base = cluster_path(doc)
    if base is not None:
        fields += [
            ((*base, "autoscalerOptions", "upscalingMode"), _values(UpscalingMode)),
            ((*base, "autoscalerOptions", "version"), _values(AutoscalerVersion)),
            ((*base, "networkPolicy", "mode"), _values(NetworkPolicyMode)),
        ]
        if doc["kind"] == "RayCluster":
            fields.append(((*base, "upgradeStrategy", "type"), _values(RayClusterUpgradeType)))
    job = job_path(doc)
    if job is not None:
        fields += [
            ((*job, "submissionMode"), _values(JobSubmissionMode)),
            ((*job, "deletionStrategy", "onSuccess", "policy"), _values(DeletionPolicyType)),
        ]
    if doc["kind"] == "RayService":
        fields.append((("spec", "upgradeStrategy", "type"), _values(RayServiceUpgradeType)))
    return fields


def _bad_enum(draw: Draw, doc: JSON) -> PathT:
    path, allowed = draw(st.sampled_from(_enum_fields(doc)))
    near_misses = st.sampled_from(allowed).map(lambda v: v.lower() if v != v.lower() else v.upper())
    text = st.text(string.ascii_letters + string.digits + "-_ ", max_size=16)
    set_in(doc, path, draw(st.one_of(near_misses, text).filter(lambda v: v not in allowed)))
    return path


_NAME_LIMITS = {"RayCluster": 53, "RayJob": 47, "RayService": 47, "RayCronJob": 36}


def _bad_name(draw: Draw, doc: JSON) -> PathT:
    limit = _NAME_LIMITS[doc["kind"]]
    too_long = st.integers(limit + 1, 300).map(lambda n: "r" + "a1-b" * (n // 4) + "z" * (n % 4))
    not_dns1035 = st.one_of(
        st.sampled_from(["1abc", "abc.def", "Upper", "under_score", "trailing-", "-lead", "a b"]),
        st.from_regex(r"[0-9][a-z0-9]{0,10}", fullmatch=True),
    )
    set_in(doc, ("metadata", "name"), draw(st.one_of(too_long, not_dns1035)))
    return ("metadata", "name")


# Conflicts: pairs of fields KubeRay keeps apart, each returning the path it must report.


def _suspend_without_shutdown(draw: Draw, doc: JSON) -> PathT:
    base = job_path(doc)
    assert base is not None
    spec = get_in(doc, base)
    spec["suspend"] = True
    spec["shutdownAfterJobFinishes"] = False
    return (*base, "suspend")


def _interactive_with_retries(draw: Draw, doc: JSON) -> PathT:
    base = job_path(doc)
    assert base is not None
    spec = get_in(doc, base)
    spec["submissionMode"] = "InteractiveMode"
    spec["backoffLimit"] = draw(st.integers(1, 10))
    return (*base, "backoffLimit")


def _selector_without_name(draw: Draw, doc: JSON) -> PathT:
    base = job_path(doc)
    assert base is not None
    spec = get_in(doc, base)
    spec.pop("rayClusterSpec", None)
    spec["clusterSelector"] = draw(
        st.sampled_from([{"app": "ray"}, {"ray.io/cluster": ""}, {"ray.io/clustr": "c"}])
    )
    return (*base, "clusterSelector[ray.io/cluster]")


def _no_cluster(draw: Draw, doc: JSON) -> PathT:
    base = job_path(doc)
    assert base is not None
    spec = get_in(doc, base)
    spec.pop("rayClusterSpec", None)
    spec.pop("clusterSelector", None)
    return (*base, "rayClusterSpec")


def _ttl_without_shutdown(draw: Draw, doc: JSON) -> PathT:
    base = job_path(doc)
    assert base is not None
    spec = get_in(doc, base)
    spec["shutdownAfterJobFinishes"] = False
    spec.pop("deletionStrategy", None)
    spec["ttlSecondsAfterFinished"] = draw(st.integers(1, 86400))
    return (*base, "ttlSecondsAfterFinished")


def _bad_runtime_env(draw: Draw, doc: JSON) -> PathT:
    base = job_path(doc)
    assert base is not None
    spec = get_in(doc, base)
    texts = ["- a\n- b\n", "pip: [unclosed", "just a sentence", "a: b: c", "'quoted'"]
    spec["runtimeEnvYAML"] = draw(st.sampled_from(texts))
    return (*base, "runtimeEnvYAML")


def _bad_entrypoint_resources(draw: Draw, doc: JSON) -> PathT:
    base = job_path(doc)
    assert base is not None
    spec = get_in(doc, base)
    texts = ['{"a": "x"}', "not json", "[1]", '{"a": NaN}', '{"a": true}', "{"]
    spec["entrypointResources"] = draw(st.sampled_from(texts))
    return (*base, "entrypointResources")


def _sidecar_with_submitter(draw: Draw, doc: JSON) -> PathT:
    base = job_path(doc)
    assert base is not None
    spec = get_in(doc, base)
    spec["submissionMode"] = "SidecarMode"
    field = draw(st.sampled_from(["submitterPodTemplate", "submitterConfig"]))
    spec[field] = {} if field == "submitterConfig" else {"spec": {"containers": []}}
    return (*base, field)


def _resources_twice(draw: Draw, doc: JSON) -> PathT:
    group = draw(st.sampled_from(node_group_paths(doc)))
    key = draw(st.sampled_from(["num-cpus", "num-gpus", "memory"]))
    set_in(doc, (*group, "rayStartParams", key), "1")
    set_in(doc, (*group, "resources"), {"CPU": "1"})
    return (*group, "resources")


def _labels_in_start_params(draw: Draw, doc: JSON) -> PathT:
    group = draw(st.sampled_from(node_group_paths(doc)))
    set_in(doc, (*group, "rayStartParams", "labels"), "zone=a")
    return (*group, "rayStartParams[labels]")


def _bad_group_label(draw: Draw, doc: JSON) -> PathT:
    group = draw(st.sampled_from(node_group_paths(doc)))
    bad_key = st.sampled_from(["-bad", "a/b/c", "UPPER_/x", "k" * 64, "has space", "/x"])
    key, value = draw(
        st.one_of(
            st.tuples(bad_key, st.just("v")),
            st.tuples(st.just("ok"), st.sampled_from(["-v", "v" * 64, "a b", "v_"])),
        )
    )
    set_in(doc, (*group, "labels"), {key: value})
    return (*group, f"labels[{key}]")


def _duplicate_group(draw: Draw, doc: JSON) -> PathT:
    base = cluster_path(doc)
    assert base is not None
    groups = get_in(doc, (*base, "workerGroupSpecs"))
    source = draw(st.sampled_from(group_paths(doc)))
    groups.append(copy.deepcopy(get_in(doc, source)))
    return (*base, "workerGroupSpecs", len(groups) - 1, "groupName")


def _no_containers(draw: Draw, doc: JSON) -> PathT:
    group = draw(st.sampled_from(node_group_paths(doc)))
    path = (*group, "template", "spec", "containers")
    set_in(doc, path, [])
    return path


def _ft_annotation_and_options(draw: Draw, doc: JSON) -> PathT:
    base = cluster_path(doc)
    assert base is not None
    set_in(
        doc,
        ("metadata", "annotations", "ray.io/ft-enabled"),
        draw(st.sampled_from(["true", "false"])),
    )
    set_in(doc, (*base, "gcsFaultToleranceOptions"), {"redisAddress": "redis:6379"})
    return (*base, "gcsFaultToleranceOptions")


def _redis_password_in_params(draw: Draw, doc: JSON) -> PathT:
    base = cluster_path(doc)
    assert base is not None
    set_in(doc, (*base, "gcsFaultToleranceOptions"), {"redisAddress": "redis:6379"})
    set_in(doc, (*base, "headGroupSpec", "rayStartParams", "redis-password"), "hunter2")
    return (*base, "headGroupSpec", "rayStartParams[redis-password]")


def _upgrade_strategy_on_owned(draw: Draw, doc: JSON) -> PathT:
    base = cluster_path(doc)
    assert base is not None
    set_in(
        doc,
        (*base, "upgradeStrategy"),
        {"type": draw(st.sampled_from(_values(RayClusterUpgradeType)))},
    )
    return (*base, "upgradeStrategy", "type")


def _bad_managed_by(draw: Draw, doc: JSON) -> PathT:
    value = draw(st.sampled_from(["kuberay", "kueue", "ray.io/kuberay", "me", ""]))
    base = job_path(doc) or ("spec",)  # a RayCronJob has none: its template's
    set_in(doc, (*base, "managedBy"), value)
    return (*base, "managedBy")


def _head_service_name(draw: Draw, doc: JSON) -> PathT:
    base = cluster_path(doc)
    assert base is not None
    set_in(doc, (*base, "headGroupSpec", "headService"), {"metadata": {"name": draw(NAMES)}})
    return (*base, "headGroupSpec", "headService", "metadata", "name")


def _incremental_without_autoscaler(draw: Draw, doc: JSON) -> PathT:
    _incremental(doc)
    base = CLUSTER_SPEC["RayService"]
    set_in(doc, (*base, "enableInTreeAutoscaling"), False)
    return (*base, "enableInTreeAutoscaling")


def _bad_serve_config(draw: Draw, doc: JSON) -> PathT:
    texts = ["- a\n", "applications: [", "just text", "a: b: c"]
    doc["spec"]["serveConfigV2"] = draw(st.sampled_from(texts))
    return ("spec", "serveConfigV2")


def _bad_schedule(draw: Draw, doc: JSON) -> PathT:
    texts = ["", "* * * *", "61 * * * *", "@every", "@sometimes", "* * * * * * *", "a b c d e"]
    doc["spec"]["schedule"] = draw(st.sampled_from(texts))
    return ("spec", "schedule")


def _bad_time_zone(draw: Draw, doc: JSON) -> PathT:
    zones = ["Mars/Olympus", "utc+1", "Europe/", "../etc/passwd", "Local", "TZ=UTC"]
    doc["spec"]["timeZone"] = draw(st.sampled_from(zones))
    return ("spec", "timeZone")


def _bad_catchup_window(draw: Draw, doc: JSON) -> PathT:
    value = draw(st.sampled_from(["-5m", "0", "0s", "abc", "5 minutes", "1.5"]))
    set_in(doc, ("metadata", "annotations", ANNOTATION_CATCHUP_WINDOW), value)
    return ("metadata", f"annotations[{ANNOTATION_CATCHUP_WINDOW}]")


def _bad_initializing_timeout(draw: Draw, doc: JSON) -> PathT:
    value = draw(st.sampled_from(["-5m", "0", "0s", "abc", "5 minutes", "1.5", "-3"]))
    set_in(doc, ("metadata", "annotations", "ray.io/initializing-timeout"), value)
    return ("metadata", "annotations[ray.io/initializing-timeout]")


MUTATIONS: tuple[Mutation, ...] = (
    Mutation("drop-required", _always, _drop_required),
    Mutation("wrong-type", _always, _wrong_type),
    Mutation("out-of-range", lambda d: _has_groups(d) or d["kind"] != "RayCluster", _out_of_range),
    Mutation("bad-enum", lambda d: bool(_enum_fields(d)), _bad_enum),
    Mutation("bad-name", _always, _bad_name),
    Mutation("suspend-without-shutdown", _has_job, _suspend_without_shutdown),
    Mutation("interactive-with-retries", _has_job, _interactive_with_retries),
    Mutation("selector-without-name", _has_job, _selector_without_name),
    Mutation("no-cluster", _has_job, _no_cluster),
    Mutation("ttl-without-shutdown", _has_job, _ttl_without_shutdown),
    Mutation("bad-runtime-env", _has_job, _bad_runtime_env),
    Mutation("bad-entrypoint-resources", _has_job, _bad_entrypoint_resources),
    Mutation("sidecar-with-submitter", _has_job, _sidecar_with_submitter),
    Mutation("resources-twice", _has_cluster, _resources_twice),
    Mutation("labels-in-start-params", _has_cluster, _labels_in_start_params),
    Mutation("bad-group-label", _has_cluster, _bad_group_label),
    Mutation("duplicate-group", _has_groups, _duplicate_group),
    Mutation("no-containers", _has_cluster, _no_containers),
    # A RayCronJob's annotations do not reach its RayJobs: no conflict there.
    Mutation(
        "ft-annotation-and-options",
        lambda d: _has_cluster(d) and d["kind"] != "RayCronJob",
        _ft_annotation_and_options,
    ),
    Mutation("redis-password-in-params", _has_cluster, _redis_password_in_params),
    Mutation(
        "upgrade-strategy-on-owned",
        _has_cluster_of("RayJob", "RayService", "RayCronJob"),
        _upgrade_strategy_on_owned,
    ),
    Mutation("bad-managed-by", _always, _bad_managed_by),
    Mutation("head-service-name", _has_cluster_of("RayService"), _head_service_name),
    Mutation(
        "incremental-without-autoscaler",
        _has_cluster_of("RayService"),
        _incremental_without_autoscaler,
    ),
    Mutation("bad-serve-config", _kind("RayService"), _bad_serve_config),
    Mutation("bad-initializing-timeout", _kind("RayService"), _bad_initializing_timeout),
    Mutation("bad-schedule", _kind("RayCronJob"), _bad_schedule),
    Mutation("bad-time-zone", _kind("RayCronJob"), _bad_time_zone),
    Mutation("bad-catchup-window", _kind("RayCronJob"), _bad_catchup_window),
)


@st.composite
def broken_objects(draw: Draw, kinds: tuple[str, ...] = KINDS) -> Broken:
    """A valid object of one of `kinds` with one mutation applied."""
    kind = draw(st.sampled_from(kinds))
    doc = draw(valid_objects(kind))
    mutation = draw(st.sampled_from([m for m in MUTATIONS if m.applies(doc)]))
    expected = mutation.apply(draw, doc)
    return Broken(doc=doc, expected=render(expected), mutation=mutation.name)


# --- arbitrary shapes -------------------------------------------------------------------------

_KEYS = st.one_of(
    st.sampled_from(
        [
            "spec", "metadata", "name", "template", "containers", "env", "workerGroupSpecs",
            "groupName", "replicas", "rayStartParams", "annotations", "labels", "status",
            "conditions", "headGroupSpec", "rayClusterSpec", "rayClusterConfig", "value",
        ]
    ),
    st.text(max_size=6),
)  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=10),
)


def json_values(max_leaves: int = 20) -> st.SearchStrategy[Any]:
    """Arbitrary JSON: scalars, lists and objects nested to any depth."""
    return st.recursive(
        _SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def _paths(value: Any, prefix: PathT = ()) -> list[PathT]:
    """Every path inside a JSON value (containers and leaves)."""
    found: list[PathT] = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


@st.composite
def fuzzed_objects(draw: Draw, kinds: tuple[str, ...] = KINDS) -> JSON:
    """A valid object with one to three random subtrees replaced, deleted or added."""
    doc = draw(valid_objects(draw(st.sampled_from(kinds))))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p and p[0] != "kind"]
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        parent = get_in(doc, path[:-1])
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(get_in(doc, path), dict):
            get_in(doc, path)[draw(_KEYS)] = draw(json_values(8))
        else:
            parent[path[-1]] = draw(json_values(8))
    return doc
